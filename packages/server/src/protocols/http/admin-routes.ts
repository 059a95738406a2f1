/** The admin API (`/admin/...`): lists, keys, reload, each behind the admin token. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isSluiceError } from 'sluice';
import type { AccessLists, ListName } from '../../core/access-lists.js';
import type { AdminAuthenticator } from './admin-auth.js';
import { peerKey } from './peer-key.js';
import { HttpError, readJson, sendJson } from './respond.js';

/** What the admin API can do to a running service. */
export interface AdminActions {
  /** Reloads the config from its files; the last good rules stay when the new ones are invalid. */
  reload(): Promise<{ ok: boolean; [field: string]: unknown }>;
  /** Looks at a key's counters without counting: `{domain, descriptors}` or a `/v1/check` item. */
  inspect(body: unknown): Promise<unknown>;
  /** Forgets a key's counters: `{domain, descriptors}` or a `/v1/check` item. */
  reset(body: unknown): Promise<unknown>;
}

/** Options of {@link createAdminRoutes}. */
export interface AdminRoutesOptions {
  auth: AdminAuthenticator;
  /** The clock of the failure backoff. @default Date.now */
  now?: () => number;
  lists: AccessLists;
  actions: AdminActions;
  maxBodyBytes: number;
  /** `POST /admin/explain` (see explain-route.ts); absent: 404. */
  explain?: (body: unknown) => Promise<unknown>;
}

const LISTS = new Set<ListName>(['allow', 'deny']);

/**
 * The admin API under `/admin`, behind `Authorization: Bearer $SLUICE_ADMIN_TOKEN`: 404 when no token is
 * configured (admin is off), 401 without credentials, 403 with wrong ones.
 *
 * - `POST /admin/reload`
 * - `GET /admin/lists`, `GET|POST /admin/lists/{allow|deny}`, `DELETE /admin/lists/{allow|deny}/{id}`
 * - `POST /admin/keys/inspect`, `POST /admin/keys/reset`
 * - `POST /admin/explain`
 */
export function createAdminRoutes(options: AdminRoutesOptions) {
  const { auth, lists, actions, maxBodyBytes } = options;
  const now = options.now ?? Date.now;
  return async (req: IncomingMessage, res: ServerResponse, pathname: string): Promise<number> => {
    checkAdmin(auth, req, now);
    const parts = pathname.split('/').filter(Boolean).slice(1); // drop "admin"
    const method = req.method ?? 'GET';
    const reply = (status: number, body: unknown) => {
      sendJson(res, status, body);
      return status;
    };
    const [group, name, id] = parts;
    if (group === 'reload' && parts.length === 1) {
      allow(method, ['POST']);
      const result = await actions.reload();
      return reply(result.ok ? 200 : 422, result);
    }
    if (group === 'lists') {
      if (name === undefined) {
        allow(method, ['GET']);
        return reply(200, { allow: lists.list('allow'), deny: lists.list('deny') });
      }
      if (!LISTS.has(name as ListName)) throw notFound(pathname);
      const list = name as ListName;
      if (id === undefined && parts.length === 2) {
        allow(method, ['GET', 'POST']);
        if (method === 'GET') return reply(200, { [list]: lists.list(list) });
        const body = await readJson(req, maxBodyBytes);
        try {
          return reply(201, lists.add(list, body as never));
        } catch (error) {
          if (isSluiceError(error)) throw new HttpError(400, error.code, error.message);
          throw error;
        }
      }
      if (id !== undefined && parts.length === 3) {
        allow(method, ['DELETE']);
        if (!lists.remove(list, decodePathSegment(id))) {
          throw new HttpError(404, 'ERR_SLUICE_NOT_FOUND', `no ${list} list entry with id '${id}'`);
        }
        return reply(200, { removed: true, id });
      }
    }
    if (group === 'keys' && (name === 'inspect' || name === 'reset') && parts.length === 2) {
      allow(method, ['POST']);
      const body = await readJson(req, maxBodyBytes);
      const result = name === 'inspect' ? await actions.inspect(body) : await actions.reset(body);
      return reply(200, result);
    }
    if (group === 'explain' && parts.length === 1 && options.explain !== undefined) {
      allow(method, ['POST']);
      return reply(200, await options.explain(await readJson(req, maxBodyBytes)));
    }
    throw notFound(pathname);
  };
}

/**
 * The admin token check shared by `/admin` and the dashboard's key data: 401 without credentials, 403
 * with wrong ones, 429 (with `Retry-After`) while the caller's address waits after repeated wrong tokens.
 * Answers the verdict when it lets the request on (`ok`, or `disabled`/`missing` for callers that allow them).
 */
export function checkAdmin(
  auth: AdminAuthenticator,
  req: IncomingMessage,
  now: () => number,
  allowAnonymous = false,
): 'ok' | 'disabled' | 'missing' {
  const address = peerKey(req.socket.remoteAddress);
  const verdict = auth(req.headers.authorization, address, now());
  if (verdict === 'locked') {
    const seconds = Math.max(1, Math.ceil(auth.retryAfterMs(address, now()) / 1000));
    throw new HttpError(
      429,
      'ERR_SLUICE_ADMIN_LOCKED',
      `too many wrong admin tokens from this address; try again in ${seconds} s`,
      false,
      { 'retry-after': String(seconds) },
    );
  }
  if (verdict === 'wrong') throw new HttpError(403, 'ERR_SLUICE_FORBIDDEN', 'the admin token is wrong');
  if (verdict === 'ok' || allowAnonymous) return verdict;
  if (verdict === 'disabled') {
    throw new HttpError(404, 'ERR_SLUICE_ADMIN_DISABLED', 'the admin API is off; set SLUICE_ADMIN_TOKEN to turn it on');
  }
  throw new HttpError(401, 'ERR_SLUICE_UNAUTHORIZED', 'send Authorization: Bearer <SLUICE_ADMIN_TOKEN>', false, {
    'www-authenticate': 'Bearer realm="sluice admin"',
  });
}

/** A path segment's percent-decoding; a malformed escape is the client's error (400), not ours. */
function decodePathSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new HttpError(
      400,
      'ERR_SLUICE_BAD_PATH',
      `'${segment.slice(0, 64)}' is not a valid percent-encoded path segment`,
    );
  }
}

function allow(method: string, methods: readonly string[]): void {
  if (!methods.includes(method)) {
    throw new HttpError(405, 'ERR_SLUICE_METHOD_NOT_ALLOWED', `use ${methods.join(' or ')}`);
  }
}

function notFound(pathname: string): HttpError {
  return new HttpError(404, 'ERR_SLUICE_NOT_FOUND', `no admin endpoint at ${pathname}`);
}
