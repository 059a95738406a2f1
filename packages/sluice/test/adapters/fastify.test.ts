import { fastifyHarness } from './harness.js';
import { runAdapterSuite } from './suite.js';

runAdapterSuite(fastifyHarness);
