import { makeApp } from './app.js';

declare const Bun: {
  env: Record<string, string | undefined>;
  serve(options: { port: number; hostname: string; fetch: unknown }): { port: number };
};
const app = makeApp('bun', Bun.env.SLUICE_URL as string, Number(Bun.env.LIMIT));
// app.fetch itself, so Hono receives the server (and its requestIP) as c.env.
const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: app.fetch });
console.log(JSON.stringify({ listening: server.port }));
