import { createMemoryStore } from '../../src/stores/memory/memory-store.js';
import { runStoreConformance } from './suite.js';

runStoreConformance(
  'memory',
  async () => {
    const store = createMemoryStore();
    return { store, close: () => store.close() };
  },
  {
    withMaxKeys: async (maxKeys) => {
      const store = createMemoryStore({ maxKeys });
      return { store, close: () => store.close() };
    },
  },
);
