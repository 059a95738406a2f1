import { makeApp } from './app.js';

declare const Deno: {
  env: { get(name: string): string | undefined };
  serve(options: { port: number; hostname: string; onListen(addr: { port: number }): void }, handler: unknown): unknown;
};
const app = makeApp('deno', Deno.env.get('SLUICE_URL') as string, Number(Deno.env.get('LIMIT')));
// app.fetch itself, so Hono receives the connection info (remoteAddr) as c.env.
Deno.serve(
  { port: 0, hostname: '127.0.0.1', onListen: ({ port }) => console.log(JSON.stringify({ listening: port })) },
  app.fetch,
);
