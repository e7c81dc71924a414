import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { TCP_STATES, addCounts, emptyCounts, parseSocketTable } from './sockets.js';

const FIXTURES = new URL('../../../../../test/fixtures/linuxutil/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');
const state = (counts: readonly number[], name: string): number => counts[TCP_STATES.indexOf(name as never)] ?? -1;

describe('parseSocketTable', () => {
  it('counts a recorded /proc/net/tcp by state', () => {
    const r = parseSocketTable(fixture('tcp.txt'), '/proc/net/tcp');
    assert.deepEqual(r.issues, []);
    assert.equal(state(r.value.byState, 'ESTABLISHED'), 1);
    assert.equal(state(r.value.byState, 'TIME_WAIT'), 26);
    assert.equal(state(r.value.byState, 'LISTEN'), 1);
    assert.equal(r.value.total, 28);
    assert.equal(r.value.withRemote, 27, 'the listener has no remote end');
  });

  it('reads IPv6 sockets (32-digit addresses, v4-mapped included)', () => {
    const r = parseSocketTable(fixture('tcp6.txt'), '/proc/net/tcp6');
    assert.deepEqual(r.issues, []);
    assert.equal(state(r.value.byState, 'LISTEN'), 1);
    assert.equal(state(r.value.byState, 'ESTABLISHED'), 3);
    assert.equal(r.value.withRemote, 3);
    const v4 = parseSocketTable(fixture('tcp-with-v6-peer.txt'), '/proc/net/tcp');
    const both = addCounts(v4.value, r.value);
    assert.equal(state(both.byState, 'ESTABLISHED'), 4);
    assert.equal(both.total, 5);
  });

  it('counts UDP sockets whatever their state', () => {
    const v4 = parseSocketTable(fixture('udp.txt'), '/proc/net/udp');
    const v6 = parseSocketTable(fixture('udp6.txt'), '/proc/net/udp6');
    assert.deepEqual([...v4.issues, ...v6.issues], []);
    assert.equal(v4.value.total, 0);
    assert.equal(v6.value.total, 1);
    assert.equal(state(v6.value.byState, 'CLOSE'), 1);
  });

  it('skips and names garbage lines and unknown states, keeping the good ones', () => {
    const r = parseSocketTable(fixture('tcp-garbage.txt'), 'tcp');
    assert.deepEqual(r.issues, [
      'tcp line 4: unknown socket state 0x0C',
      'tcp line 5: not a socket line: "garbage line here"',
      'tcp line 6: not a socket line: "  10: 0100007F:1F90"',
      'tcp line 7: not a socket line: "  11: ZZZZZZZZ:1F90 0100007F:B976 01 0"',
    ]);
    assert.equal(r.value.total, 3);
    assert.equal(state(r.value.byState, 'TIME_WAIT'), 2);
    assert.equal(state(r.value.byState, 'LISTEN'), 1);
  });

  it('reports a missing header but still counts', () => {
    const r = parseSocketTable(fixture('tcp-no-header.txt'), 'tcp');
    assert.equal(r.issues.length, 1);
    assert.match(r.issues[0] as string, /^tcp line 1: expected the "sl local_address …" header/);
    assert.equal(r.value.total, 1, 'the first line is taken as the header');
  });

  it('reports an empty file', () => {
    const r = parseSocketTable(fixture('empty.txt'), '/proc/net/tcp6');
    assert.deepEqual(r.issues, ['/proc/net/tcp6: empty file (expected a header line)']);
    assert.deepEqual(r.value, emptyCounts());
  });

  it('uses go-netstat state names with CLOSE instead of ""', () => {
    assert.deepEqual(TCP_STATES.slice(1), [
      'ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT', 'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING',
    ]);
  });
});
