/** Certificates made by openssl for one test run (gRPC TLS, Redis TLS). */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A throwaway PKI: CAs, and leaf certificates signed by them. */
export function createPki(dir: string) {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const ca = (name: string) => {
    openssl(
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
    );
    return join(dir, `${name}.pem`);
  };
  /** A new EC key and a signing request for it (`name.key`, `name.csr`). */
  const request = (name: string, ...extra: string[]) =>
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name}`,
      ...extra,
    );
  const leaf = (name: string, caName: string, san: string) => {
    request(name);
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${caName}.pem`,
      '-CAkey',
      `${caName}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
    );
    return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  };
  /**
   * A self-signed certificate valid only between `start` and `end` (openssl's YYYYMMDDHHMMSSZ), e.g. one
   * that expired years ago: `openssl req -days` cannot make one, `openssl ca` can.
   */
  const dated = (name: string, san: string, start: string, end: string) => {
    writeFileSync(join(dir, `${name}-index.txt`), '');
    writeFileSync(join(dir, `${name}-serial`), '01\n');
    writeFileSync(
      join(dir, `${name}-ca.cnf`),
      `[ca]\ndefault_ca = d\n[d]\ndatabase = ${name}-index.txt\nserial = ${name}-serial\nnew_certs_dir = .\n` +
        'default_md = sha256\npolicy = p\ncopy_extensions = copy\n[p]\ncommonName = supplied\n',
    );
    request(name, '-addext', `subjectAltName=${san}`);
    openssl(
      'ca',
      '-batch',
      '-config',
      `${name}-ca.cnf`,
      '-selfsign',
      '-keyfile',
      `${name}.key`,
      '-in',
      `${name}.csr`,
      '-out',
      `${name}.pem`,
      '-startdate',
      start,
      '-enddate',
      end,
    );
    return { cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) };
  };
  return { ca, leaf, dated };
}
