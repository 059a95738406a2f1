import { honoHarness } from './harness.js';
import { runAdapterSuite } from './suite.js';

runAdapterSuite(honoHarness);
