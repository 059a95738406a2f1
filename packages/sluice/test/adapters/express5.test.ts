import { express5Harness } from './harness.js';
import { runAdapterSuite } from './suite.js';

runAdapterSuite(express5Harness);
