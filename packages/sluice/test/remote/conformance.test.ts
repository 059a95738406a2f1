/**
 * The store conformance suite, unchanged, against the remote store and a real `sluice serve` (memory
 * store), started with --client-clock because the suite drives time; once batched (the default), once
 * one HTTP request per operation.
 */
import { type SluiceProcess, startSluice } from '../../../server/test/integration/helpers.js';
import { createRemoteStore } from '../../src/stores/remote/index.js';
import { runStoreConformance } from '../stores/suite.js';

for (const batch of [true, false]) {
  runStoreConformance(`remote (sluice serve over HTTP${batch ? '' : ', no batching'})`, async () => {
    const service: SluiceProcess = await startSluice(['--client-clock']);
    const store = createRemoteStore({
      url: `http://127.0.0.1:${service.http}`,
      clock: 'client',
      timeoutMs: 5000,
      batch,
    });
    return {
      store,
      close: async () => {
        await store.close();
        await service.stop();
      },
    };
  });
}
