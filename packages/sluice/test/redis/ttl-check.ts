import type { Cluster, Redis } from 'ioredis';

/**
 * Every key on the node(s) behind `client` that has no TTL (SCAN + PTTL). sluice must leave none: all
 * its keys expire by themselves. Also returns how many keys were seen, so a test knows it looked at some.
 */
export async function keysWithoutTtl(client: Redis | Cluster): Promise<{ seen: number; missing: string[] }> {
  const nodes = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client as Redis];
  let seen = 0;
  const missing: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        seen++;
        // -1 is "no TTL"; -2 is a key that expired between SCAN and PTTL (short windows do), which is fine.
        if ((await node.pttl(key)) === -1) missing.push(key);
      }
    } while (cursor !== '0');
  }
  return { seen, missing };
}
