/**
 * A port the service cannot have: already in use (ERR_SLUICE_PORT_IN_USE naming the port and the setting
 * that chose it, without grpc-js's own stray line), or given to two listeners (ERR_SLUICE_PORT_CONFLICT,
 * before anything binds).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { isSluiceError } from 'sluice';
import { checkDistinctPorts, PORT_SETTINGS } from '../../src/app/listen-ports.js';
import { startService } from '../../src/index.js';
import { CLI, ROOT } from './helpers.js';

function serve(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...CLI, 'serve', '--host', '127.0.0.1', '--log-level', 'silent', ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

describe('a port already in use', () => {
  let holder: Server;
  let held: number;
  before(async () => {
    holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    held = (holder.address() as { port: number }).port;
  });
  after(() => holder.close());

  it('gRPC: exits 1 with ERR_SLUICE_PORT_IN_USE naming the port and --grpc-port/GRPC_PORT, no grpc-js line', async () => {
    const { code, stderr } = await serve(['--port', '0', '--grpc-port', String(held)]);
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`gRPC cannot listen on 127\\.0\\.0\\.1:${held}: the port is already in use`));
    assert.match(stderr, /set by --grpc-port or GRPC_PORT/);
    assert.match(stderr, /\(ERR_SLUICE_PORT_IN_USE\)/);
    assert.doesNotMatch(stderr, /No address added/);
  });

  it('the HTTP API: names --port/PORT', async () => {
    const { code, stderr } = await serve(['--port', String(held), '--grpc-port', '0']);
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`the HTTP API cannot listen on 127\\.0\\.0\\.1:${held}`));
    assert.match(stderr, /set by --port or PORT.*\(ERR_SLUICE_PORT_IN_USE\)/);
  });
});

describe('one port given to two listeners', () => {
  it('is refused before anything binds, naming both settings', async () => {
    // A port nothing holds: a bind would succeed once, so only the up-front check can name the clash.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const port = (probe.address() as { port: number }).port;
    await new Promise((resolve) => probe.close(resolve));
    await assert.rejects(
      startService({
        host: '127.0.0.1',
        http: { port, dashboardDir: false },
        grpc: { port },
        observability: { logLevel: 'silent' },
      }),
      (error: unknown) => {
        assert.ok(isSluiceError(error, 'ERR_SLUICE_PORT_CONFLICT'), String(error));
        assert.match(
          error.message,
          new RegExp(
            `the HTTP API \\(--port or PORT\\) and gRPC \\(--grpc-port or GRPC_PORT\\) are both given port ${port}`,
          ),
        );
        return true;
      },
    );
  });

  it('is no clash on port 0, or on two distinct hosts', () => {
    const at = (host: string, port: number) => [
      { ...PORT_SETTINGS.http, host, port },
      { ...PORT_SETTINGS.metrics, host: host === '0.0.0.0' ? '0.0.0.0' : '127.0.0.2', port },
    ];
    checkDistinctPorts(at('127.0.0.1', 0));
    checkDistinctPorts(at('127.0.0.1', 9090));
    assert.throws(() => checkDistinctPorts(at('0.0.0.0', 9090)), { code: 'ERR_SLUICE_PORT_CONFLICT' });
  });
});
