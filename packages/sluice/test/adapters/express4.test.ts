import { express4Harness } from './harness.js';
import { runAdapterSuite } from './suite.js';

runAdapterSuite(express4Harness);
