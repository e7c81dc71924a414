import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseVfpCounters } from './vfp.js';
import { splitVfpOutput, vfpCommand } from './vfpctrl.js';

const fixture = (name: string): string => readFileSync(new URL(`../../../../test/fixtures/windows/${name}`, import.meta.url), 'utf8');

describe('vfpctrl /get-port-counter text', () => {
  it('reads both directions from CRLF text with banner, trailer and unknown lines', () => {
    const c = parseVfpCounters(fixture('vfp-port-counter.txt'));
    assert.deepEqual(c.issues, []);
    assert.equal(c.out.syn, 11n);
    assert.equal(c.out.aclDrops, 22n);
    assert.equal(c.in.syn, 111n);
    assert.equal(c.in.synAck, 112n);
    assert.equal(c.in.timeWaitExpired, 121n);
    assert.equal(c.in.aclDrops, 122n);
    assert.equal(Object.keys(c.in).length, 12);
  });

  it('a localized number is rejected by name and line; the other counters are kept', () => {
    const c = parseVfpCounters(fixture('vfp-port-counter-localized.txt'));
    assert.equal(c.issues.length, 1);
    assert.match(c.issues[0] as string, /^line 6: SYN packets = "1,234" is not a plain integer \(a localized number\?\)$/);
    assert.equal(c.out.syn, undefined);
    assert.equal(c.out.synAck, 12n);
    assert.equal(c.in.syn, 111n);
  });

  it('LF text and text without an IN section', () => {
    const c = parseVfpCounters('SYN packets : 5\nRST packets : 6\n');
    assert.deepEqual(c, { out: { syn: 5n, rst: 6n }, in: {}, issues: [] });
  });

  it('a batch command line names only checked ports, and its output splits back by port', () => {
    assert.equal(vfpCommand(['A-1', 'B-2']), 'echo @@retina-vfp-port A-1@@ & call vfpctrl /port A-1 /get-port-counter & echo @@retina-vfp-port B-2@@ & call vfpctrl /port B-2 /get-port-counter');
    assert.throws(() => vfpCommand(['x & del *']), /is not a port name/);
    const m = splitVfpOutput('@@retina-vfp-port A-1@@ \r\nSYN packets : 1\r\n@@retina-vfp-port B-2@@\r\nError: port not found\r\n');
    assert.deepEqual([...m], [['A-1', 'SYN packets : 1\r\n'], ['B-2', 'Error: port not found\r\n']]);
  });
});
