/**
 * The worker-thread side of {@link parseOffThread}: parses the rule sources it was given and posts the
 * LoadResult back (a RuleSet is plain data, Maps and RegExps, so it crosses by structured clone).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { parseRules, type RuleSource } from 'sluice/rules';

const { sources, mergeDomains } = workerData as { sources: RuleSource[]; mergeDomains: boolean };
parentPort?.postMessage(parseRules(sources, { mergeDomains }));
