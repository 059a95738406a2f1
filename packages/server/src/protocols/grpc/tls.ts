/** gRPC TLS: the PEM files read and checked (validity period), reloadable credentials, the client SAN check. */
import { X509Certificate } from 'node:crypto';
import { type FSWatcher, readFileSync, watch } from 'node:fs';
import { dirname } from 'node:path';
import { createSecureContext, type PeerCertificate } from 'node:tls';
import { ServerCredentials } from '@grpc/grpc-js';
import { SluiceError } from 'sluice';

/** gRPC over TLS: PEM files, reloaded when they change. With `clientCaFile`, mutual TLS. */
export interface GrpcTlsOptions {
  /** Server certificate chain (envoy: GRPC_SERVER_TLS_CERT). */
  certFile: string;
  /** Server private key (envoy: GRPC_SERVER_TLS_KEY). */
  keyFile: string;
  /** CA that client certificates must chain to; set = mutual TLS (envoy: GRPC_CLIENT_TLS_CACERT). */
  clientCaFile?: string;
  /** A DNS name the client certificate must carry (envoy: GRPC_CLIENT_TLS_SAN). */
  clientSan?: string;
}

/** The PEM bytes of one TLS setup. */
export interface TlsMaterial {
  readonly key: Buffer;
  readonly cert: Buffer;
  readonly ca?: Buffer;
}

/**
 * Reads and checks the files (a key that does not match its certificate, or a file that is not PEM,
 * fails here rather than at the first handshake).
 * @throws SluiceError `ERR_SLUICE_TLS_INVALID` naming the files.
 */
export function readTlsMaterial(options: GrpcTlsOptions, nowMs: number = Date.now()): TlsMaterial {
  try {
    const material: TlsMaterial = {
      key: readFileSync(options.keyFile),
      cert: readFileSync(options.certFile),
      ...(options.clientCaFile === undefined ? {} : { ca: readFileSync(options.clientCaFile) }),
    };
    createSecureContext(material);
    checkValidity(material.cert, nowMs);
    return material;
  } catch (error) {
    throw new SluiceError(
      'ERR_SLUICE_TLS_INVALID',
      `gRPC TLS: cannot use ${[options.certFile, options.keyFile, options.clientCaFile].filter(Boolean).join(', ')}: ${(error as Error).message}`,
    );
  }
}

/**
 * Refuses a server certificate outside its validity period: every client would refuse it at the
 * handshake, so serving with it is an outage; at start the service stops, at a reload it keeps the last
 * good certificate.
 */
function checkValidity(chain: Buffer, nowMs: number): void {
  const leaf = new X509Certificate(chain);
  const from = Date.parse(leaf.validFrom);
  const to = Date.parse(leaf.validTo);
  if (nowMs > to) throw new Error(`the server certificate expired on ${leaf.validTo}; renew it`);
  if (nowMs < from) {
    throw new Error(`the server certificate is not valid before ${leaf.validFrom}; check the clock or the certificate`);
  }
}

/** True when the peer certificate names `san` among its DNS subject alternative names. */
export function certificateHasSan(cert: PeerCertificate | undefined, san: string): boolean {
  const names = cert?.subjectaltname ?? '';
  return names.split(',').some((entry) => entry.trim() === `DNS:${san}`);
}

/**
 * Watches the TLS files' directories (a renamed-over file or a Kubernetes Secret's symlink swap is seen)
 * and calls `onChange` with the new material once the files read and check clean; a half-written or bad
 * set is reported to `onError` and the last good one stays. Returns a function that stops watching.
 */
export function watchTlsFiles(
  options: GrpcTlsOptions,
  current: TlsMaterial,
  onChange: (material: TlsMaterial) => void,
  onError: (error: Error) => void,
  debounceMs = 100,
): () => void {
  let last = current;
  let timer: NodeJS.Timeout | undefined;
  const files = [options.certFile, options.keyFile, options.clientCaFile].filter((f): f is string => f !== undefined);
  const watchers: FSWatcher[] = [];
  const reload = () => {
    timer = undefined;
    let next: TlsMaterial;
    try {
      next = readTlsMaterial(options);
    } catch (error) {
      onError(error as Error);
      return;
    }
    const same =
      next.key.equals(last.key) &&
      next.cert.equals(last.cert) &&
      (next.ca ?? Buffer.alloc(0)).equals(last.ca ?? Buffer.alloc(0));
    if (same) return;
    last = next;
    onChange(next);
  };
  for (const dir of new Set(files.map((f) => dirname(f)))) {
    try {
      const w = watch(dir, { persistent: false }, () => {
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(reload, debounceMs);
        timer.unref();
      });
      w.on('error', () => w.close());
      watchers.push(w);
    } catch (error) {
      onError(error as Error);
    }
  }
  return () => {
    if (timer !== undefined) clearTimeout(timer);
    for (const w of watchers) w.close();
  };
}

/**
 * grpc-js server credentials whose certificates can be swapped on a running server (grpc-js applies
 * `updateSecureContextOptions` to every server bound with them).
 */
export class ReloadableServerCredentials extends ServerCredentials {
  constructor(material: TlsMaterial) {
    const { key, cert, ca } = material;
    super(
      ca === undefined ? {} : { requestCert: true, rejectUnauthorized: true },
      ca === undefined ? { key, cert } : { key, cert, ca },
    );
  }

  /** Uses `material` for every new connection from now on. */
  update(material: TlsMaterial): void {
    const { key, cert, ca } = material;
    this.updateSecureContextOptions(ca === undefined ? { key, cert } : { key, cert, ca });
  }

  _equals(other: ServerCredentials): boolean {
    return other === this;
  }
}
