// The image's health probe: GET /healthcheck on PORT and grpc.health.v1.Health/Check on GRPC_PORT, from
// inside the container. Exits 0 when both answer healthy; prints what failed otherwise.
import grpc from '@grpc/grpc-js';

const httpPort = Number(process.env.PORT ?? 8080);
const grpcPort = Number(process.env.GRPC_PORT ?? 8081);
const TIMEOUT_MS = 2000;

async function http() {
  const res = await fetch(`http://127.0.0.1:${httpPort}/healthcheck`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  return res.status === 200 ? 'ok' : `GET /healthcheck answered ${res.status}`;
}

// HealthCheckRequest{service: ''} is the empty message; HealthCheckResponse{status: SERVING} is 08 01.
function grpcHealth() {
  const client = new grpc.Client(`127.0.0.1:${grpcPort}`, grpc.credentials.createInsecure());
  return new Promise((resolve) => {
    const deadline = Date.now() + TIMEOUT_MS;
    client.makeUnaryRequest(
      '/grpc.health.v1.Health/Check',
      (b) => b,
      (b) => b,
      Buffer.alloc(0),
      { deadline },
      (err, res) => {
        client.close();
        if (err) resolve(`grpc.health.v1 Check failed: ${err.message}`);
        else resolve(res[0] === 0x08 && res[1] === 1 ? 'ok' : `grpc.health.v1 status ${res[1] ?? 0}, not SERVING`);
      },
    );
  });
}

const results = await Promise.all([http().catch((e) => `GET /healthcheck failed: ${e.message}`), grpcHealth()]);
const failed = results.filter((r) => r !== 'ok');
if (failed.length > 0) {
  console.error(failed.join('; '));
  process.exit(1);
}
console.log(`healthy: http ${httpPort}, grpc ${grpcPort}, uid ${process.getuid?.()}`);
