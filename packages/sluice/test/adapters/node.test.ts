import { nodeHarness } from './harness.js';
import { runAdapterSuite } from './suite.js';

runAdapterSuite(nodeHarness);
