/**
 * `sluice/remote`: a store whose counters live in a running `sluice serve`, asked over HTTP
 * (`POST /v1/check`, batched). For edge and serverless instances that must share one limit: it uses
 * `fetch` only, so it runs on Node, Bun, Deno and Cloudflare Workers.
 * @packageDocumentation
 */
export type { FetchLike } from './batcher.js';
export type { RemoteStore, RemoteStoreOptions, RemoteStoreStats } from './remote-store.js';
export { createRemoteStore } from './remote-store.js';
