import { koaHarness } from './harness.js';
import { runAdapterSuite } from './suite.js';

runAdapterSuite(koaHarness);
