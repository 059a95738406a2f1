/**
 * Frees a unix socket path for the gRPC listener (a dead process's socket is replaced; a live one stops the start).
 */
import { lstatSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { SluiceError } from 'sluice';

/**
 * Makes `path` free for a unix socket listener: a socket file left by a process that died (nobody
 * accepts on it) is removed; a live one, or a file that is not a socket, stops the start with the path
 * named — sluice never takes over another server's socket.
 */
export async function freeSocketPath(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return;
  }
  const taken = (why: string) =>
    new SluiceError('ERR_SLUICE_INVALID_OPTION', `gRPC unix socket ${path}: ${why}`, { option: 'grpcSocket' });
  if (!isSocket) throw taken('the path exists and is not a socket');
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw taken('another process is listening on it');
  unlinkSync(path);
}
