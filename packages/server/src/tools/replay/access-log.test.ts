/** Access-log lines (nginx combined, Envoy's default format, JSON lines) read as capture records through a field mapping. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type DescriptorMapping, parseAccessLine, parseMapping } from './access-log.js';
import { readCapture } from './capture-record.js';

const byAddress = [parseMapping('remote_addr=remote_address') as DescriptorMapping];

describe('access logs', () => {
  it('reads nginx combined lines: time, the mapped fields, 429 as rejected', () => {
    const line = '203.0.113.7 - - [10/Oct/2024:13:55:36 -0700] "GET /api/items?x=1 HTTP/1.1" 429 12 "-" "curl/8.0"';
    const record = parseAccessLine(line, 'nginx', 'edge', [
      ...byAddress,
      parseMapping('method=method,path=path') as DescriptorMapping,
    ]);
    assert.deepEqual(record, {
      t: Date.parse('2024-10-10T20:55:36Z'),
      domain: 'edge',
      descriptors: [
        { entries: [{ key: 'remote_address', value: '203.0.113.7' }] },
        {
          entries: [
            { key: 'method', value: 'GET' },
            { key: 'path', value: '/api/items?x=1' },
          ],
        },
      ],
      cost: 1,
      outcome: 'OVER_LIMIT',
    });
  });

  it("reads Envoy's default format", () => {
    const line =
      '[2024-10-10T20:55:36.123Z] "POST /login HTTP/2" 200 - 10 20 3 2 "198.51.100.4" "ua" "req-1" "example.com" "10.0.0.2:8080"';
    const record = parseAccessLine(line, 'envoy', 'edge', [
      parseMapping('x_forwarded_for=remote_address,path=path') as DescriptorMapping,
    ]);
    assert.equal(typeof record, 'object');
    const r = record as Exclude<typeof record, string>;
    assert.equal(r.t, Date.parse('2024-10-10T20:55:36.123Z'));
    assert.equal(r.outcome, 'OK');
    assert.deepEqual(r.descriptors[0]?.entries, [
      { key: 'remote_address', value: '198.51.100.4' },
      { key: 'path', value: '/login' },
    ]);
  });

  it('reads JSON lines with a time in seconds, ms or ISO', () => {
    const mapping = [parseMapping('user=user_id') as DescriptorMapping];
    for (const time of [1_728_593_736, 1_728_593_736_000, '2024-10-10T20:55:36Z']) {
      const r = parseAccessLine(JSON.stringify({ time, user: 'u1', status: 200 }), 'json', 'api', mapping);
      assert.equal(typeof r === 'string' ? r : r.t, 1_728_593_736_000);
    }
  });

  it('reports lines of the wrong format or missing a mapped field, and reads on', async () => {
    const lines = [
      '203.0.113.7 - - [10/Oct/2024:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "-"',
      'garbage',
      '- - - [10/Oct/2024:13:55:36 -0700] "GET / HTTP/1.1" 200 1 "-" "-"',
      null,
      '203.0.113.8 - - [10/Oct/2024:13:55:37 -0700] "GET / HTTP/1.1" 200 1 "-" "-"',
    ];
    const problems: number[] = [];
    const records = [];
    const parse = (line: string) => parseAccessLine(line, 'nginx', 'edge', byAddress);
    for await (const r of readCapture(lines, 'access.log', (p) => problems.push(p.line), parse)) records.push(r);
    assert.equal(records.length, 2);
    assert.deepEqual(problems, [2, 3, 4]);
  });

  it('refuses a malformed mapping', () => {
    assert.equal(typeof parseMapping('=x'), 'string');
    assert.equal(typeof parseMapping('a='), 'string');
    assert.equal(typeof parseMapping('a'), 'string');
  });

  it('refuses a JSON line whose time no date holds, as a line with no time', () => {
    for (const time of [1e16, 1e300, -5]) {
      const record = parseAccessLine(JSON.stringify({ time, remote_addr: '203.0.113.7' }), 'json', 'edge', byAddress);
      assert.equal(record, 'no time it can read');
    }
  });
});
