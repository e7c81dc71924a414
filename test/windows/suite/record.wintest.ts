/**
 * Under Wine: the fixture recorder (test/windows/record, `.\build.ps1 record` on a real node) against
 * the fake computenetwork.dll/vmcompute.dll and the vfpctrl stub: every document it writes parses
 * with our parsers, the fakes' failing and vanished endpoints are reported as problems (not
 * recorded), and no address of the fakes is left in the files.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseEndpoint, parseEndpointIds, parseEndpointStats, parsePortMap, parseVfpCounters } from '../../../src/ffi/windows/index.js';
import { record } from '../record/record.js';
import './wine.js';

describe('record-fixtures under Wine (fake HCN/HNS, vfpctrl stub; our own fixtures: no real sample yet)', () => {
  it('writes parseable documents, reports the failing endpoints, scrubs the addresses', { timeout: 120_000 }, async () => {
    const out = mkdtempSync(join(tmpdir(), 'retina-record-'));
    const r = await record(out, 5, false);
    // Endpoint 1 fails with an error record, endpoint 2 vanishes between enumerate and open (fake.h).
    assert.deepEqual(r.problems.map((p) => p.slice(0, p.indexOf(':'))).sort(), ['endpoint 1', 'endpoint 2'], JSON.stringify(r.problems));
    const files = readdirSync(out).sort();
    for (const f of ['hcn-enumerate.json', 'hns-endpoints-v1.json', 'hcn-endpoint-0.json', 'hns-endpointstats-0.json', 'hcn-endpoint-3.json', 'vfp-port-counter-0.txt', 'README.md']) {
      assert.ok(files.includes(f), `${f} recorded (${files.join(', ')})`);
    }
    assert.ok(!files.some((f) => f.endsWith('.unparsed')), files.join(', '));
    // The detached endpoint (index 4) has no stats: HNS's failure answer is recorded as it came.
    assert.match(readFileSync(join(out, 'hns-endpointstats-4.json'), 'utf8'), /"Success":false/);
    const read = (f: string): string => readFileSync(join(out, f), 'utf8');
    const ids = parseEndpointIds(read('hcn-enumerate.json'));
    assert.ok(ids.length >= 5, `${ids.length} endpoints enumerated`);
    assert.ok(parsePortMap(read('hns-endpoints-v1.json')).size > 0);
    assert.match(parseEndpoint(read('hcn-endpoint-0.json'), ids[0] as string).ip ?? '', /^192\.0\.2\.\d+$/);
    assert.equal(typeof parseEndpointStats(read('hns-endpointstats-0.json'), ids[0] as string).packetsReceived, 'bigint');
    assert.deepEqual(parseVfpCounters(read('vfp-port-counter-0.txt')).issues, []);
    for (const f of files) assert.doesNotMatch(read(f), /10\.240\.|00-15-5D/i, `${f} still holds a fake's address or MAC`);
  });
});
