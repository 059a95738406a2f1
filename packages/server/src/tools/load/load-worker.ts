/** A load thread of `sluice bench --threads N`: runs its share of the load and posts what it measured. */
import { parentPort, workerData } from 'node:worker_threads';
import { createCaller, type LoadMessage, type LoadWorkerData, runLoad } from './load.js';

const data = workerData as LoadWorkerData;
const port = parentPort;
if (port !== null) {
  const caller = createCaller(data.target);
  const sample = await runLoad(caller.call, data.concurrency, data.warmupMs, data.durationMs, (count) =>
    port.postMessage({ type: 'progress', count } satisfies LoadMessage),
  );
  caller.close();
  port.postMessage({ type: 'done', sample } satisfies LoadMessage, [sample.samples.buffer as ArrayBuffer]);
}
