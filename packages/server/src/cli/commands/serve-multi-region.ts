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
} as const;

const usage = (message: string) => new SluiceError('ERR_SLUICE_INVALID_OPTION', message);

/** The lines of `sluice serve --help` about them. */
export const MULTI_REGION_HELP = `  --region NAME          run as region NAME of several; --redis is this region's Redis [env SLUICE_REGION]
  --region-peer N=URL    another region's Redis; repeat per region      [env SLUICE_REGION_PEERS, comma-separated]
  --multi-region-mode M  escrow (never over the limit; default) | eventual (fixed/sliding window, stated bound)
  --sync-interval D      how often regions exchange counts or shares (default 1s)`;

/** What the flags parse into. */
type Values = {
  region?: string | undefined;
  'region-peer'?: string[] | undefined;
  'multi-region-mode'?: string | undefined;
  'sync-interval'?: string | undefined;
};

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
  const others = [values['multi-region-mode'], values['sync-interval']].some((v) => v !== undefined);
  if (region === undefined || region === '') {
    if (peerList.length > 0 || others)
      throw usage('--region-peer, --multi-region-mode and --sync-interval need --region');
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
  return options;
}
