/**
 * The worker-thread side of {@link parseOffThread}: parses the rule sources it was given and posts the
 * LoadResult back (a RuleSet is plain data, Maps and RegExps, so it crosses by structured clone).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseRules, type RuleSource } from 'sluice/rules';

parentPort?.postMessage(parseRules(workerData as RuleSource[]));
