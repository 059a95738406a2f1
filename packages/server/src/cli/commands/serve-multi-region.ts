/**
 * `sluice serve`'s flags for running in one region of several: kept here, apart from the other
 * flags, so serve.ts only spreads the option specs in and calls {@link multiRegionOptions}.
 */
import { parseDuration, SluiceError } from 'sluice';
import type { MultiRegionOptions } from '../../index.js';

/** The parseArgs specs of the multi-region flags. */
export const MULTI_REGION_FLAGS = {
  region: { type: 'string' },
  'region-peer': { type: 'string', multiple: true },
  'multi-region-mode': { type: 'string' },
  'sync-interval': { type: 'string' },
  'region-peer-max-reply': { type: 'string' },
} as const;

const usage = (message: string) => new SluiceError('ERR_SLUICE_INVALID_OPTION', message);

/** The lines of `sluice serve --help` about them. */
export const MULTI_REGION_HELP = `  --region NAME          run as region NAME of several; --redis is this region's Redis [env SLUICE_REGION]
  --region-peer N=URL    another region's Redis; repeat per region      [env SLUICE_REGION_PEERS, comma-separated]
  --multi-region-mode M  escrow (never over the limit; default) | eventual (fixed/sliding window, stated bound)
  --sync-interval D      how often regions exchange counts or shares (default 1s)
  --region-peer-max-reply N  most bytes of one reply from a peer's Redis (N, or with kb/mb; default 1mb)`;

/** What the flags parse into. */
type Values = {
  region?: string | undefined;
  'region-peer'?: string[] | undefined;
  'multi-region-mode'?: string | undefined;
  'sync-interval'?: string | undefined;
  'region-peer-max-reply'?: string | undefined;
};

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** `1048576`, `64kb`, `1mb` → bytes, from 1 KiB (a sync reply's few hundred bytes) to 1 GiB. */
function replyBytes(text: string): number {
  const match = /^(\d{1,10})\s*(b|kb|mb|gb)?$/i.exec(text.trim());
  const bytes = match === null ? Number.NaN : Number(match[1]) * (SIZE_UNITS[(match[2] ?? '').toLowerCase()] ?? 1);
  if (!(bytes >= 1024 && bytes <= 1024 ** 3)) {
    throw usage(
      `--region-peer-max-reply: '${text.slice(0, 40)}' is not a size from 1kb to 1gb (bytes, or with kb, mb or gb)`,
    );
  }
  return bytes;
}

/**
 * The multi-region options from the flags and environment (flags win), or undefined when no region is
 * given. `redisUrl` is this region's Redis (`--redis` / `REDIS_URL`). Throws ERR_SLUICE_INVALID_OPTION
 * with a message that says what to fix.
 */
export function multiRegionOptions(
  values: Values,
  env: NodeJS.ProcessEnv,
  redisUrl: string | undefined,
): MultiRegionOptions | undefined {
  const region = values.region ?? env.SLUICE_REGION;
  const peerList = values['region-peer'] ?? (env.SLUICE_REGION_PEERS ? env.SLUICE_REGION_PEERS.split(',') : []);
  const others = [values['multi-region-mode'], values['sync-interval'], values['region-peer-max-reply']].some(
    (v) => v !== undefined,
  );
  if (region === undefined || region === '') {
    if (peerList.length > 0 || others)
      throw usage('--region-peer, --multi-region-mode, --sync-interval and --region-peer-max-reply need --region');
    return undefined;
  }
  if (redisUrl === undefined || redisUrl === '') {
    throw usage(`--region ${region}: give this region's Redis with --redis URL (or REDIS_URL)`);
  }
  const peers: Record<string, string> = {};
  for (const item of peerList) {
    const at = item.indexOf('=');
    const name = item.slice(0, at).trim();
    const url = item.slice(at + 1).trim();
    if (at <= 0 || url === '') throw usage(`--region-peer: '${item}' is not NAME=redis://host:port`);
    if (name === region) throw usage(`--region-peer: ${name} is this region (--region)`);
    if (Object.hasOwn(peers, name)) throw usage(`--region-peer: ${name} given twice`);
    peers[name] = url;
  }
  if (Object.keys(peers).length === 0) {
    throw usage(`--region ${region}: name the other regions with --region-peer NAME=URL (one per region)`);
  }
  const options: MultiRegionOptions = { region, url: redisUrl, peers };
  const mode = values['multi-region-mode'];
  if (mode !== undefined) {
    if (mode !== 'escrow' && mode !== 'eventual') throw usage('--multi-region-mode: escrow or eventual');
    options.mode = mode;
  }
  if (values['sync-interval'] !== undefined) {
    options.syncIntervalMs = parseDuration(values['sync-interval'], '--sync-interval');
  }
  if (values['region-peer-max-reply'] !== undefined) {
    options.maxPeerReplyBytes = replyBytes(values['region-peer-max-reply']);
  }
  return options;
}
