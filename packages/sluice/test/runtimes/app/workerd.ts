import type { Hono } from 'hono';
import { makeApp } from './app.js';

interface Env {
  SLUICE_URL: string;
  LIMIT: string;
}
let app: Hono | undefined;

export default {
  fetch(request: Request, env: Env, ctx: unknown): Response | Promise<Response> {
    app ??= makeApp('workerd', env.SLUICE_URL, Number(env.LIMIT));
    return app.fetch(request, env, ctx as never);
  },
};
