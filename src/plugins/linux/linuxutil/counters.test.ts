import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseNameValueLines, parseSectionPairs } from './counters.js';

const FIXTURES = new URL('../../../../../test/fixtures/linuxutil/', import.meta.url);
const fixture = (name: string): string => readFileSync(new URL(name, FIXTURES), 'utf8');

describe('parseSectionPairs', () => {
  it('reads a recorded /proc/net/netstat', () => {
    const r = parseSectionPairs(fixture('netstat.txt'), '/proc/net/netstat');
    assert.deepEqual(r.issues, []);
    assert.deepEqual([...r.value.keys()], ['TcpExt', 'IpExt', 'MPTcpExt']);
    assert.equal(r.value.get('TcpExt')?.get('TCPTimeouts'), 2);
    assert.equal(r.value.get('TcpExt')?.get('ListenDrops'), 0);
    assert.equal(r.value.get('IpExt')?.get('InOctets'), 580304490);
    assert.equal(r.value.get('IpExt')?.get('InNoECTPkts'), 24222);
    assert.ok((r.value.get('MPTcpExt')?.size ?? 0) > 10);
  });

  it('reads a recorded /proc/net/snmp, unknown sections included, MaxConn -1', () => {
    const r = parseSectionPairs(fixture('snmp.txt'), '/proc/net/snmp');
    assert.deepEqual(r.issues, []);
    assert.deepEqual([...r.value.keys()], ['Ip', 'Icmp', 'IcmpMsg', 'Tcp', 'Udp', 'UdpLite']);
    assert.equal(r.value.get('Tcp')?.get('MaxConn'), -1);
    assert.equal(r.value.get('Tcp')?.get('ActiveOpens'), 150);
    assert.equal(r.value.get('Udp')?.get('OutDatagrams'), 178);
  });

  it('skips a section whose names and values differ in length, naming file and line', () => {
    const r = parseSectionPairs(fixture('netstat-length-mismatch.txt'), 'x/netstat');
    assert.deepEqual(r.issues, ['x/netstat line 2: "TcpExt:" has 4 names but 3 values']);
    assert.equal(r.value.has('TcpExt'), false);
    assert.deepEqual([...(r.value.get('IpExt') ?? [])], [['InNoRoutes', 1], ['InOctets', 1000], ['InCsumErrors', 2]]);
  });

  it('reports a header without values (Retina: single-line file)', () => {
    const r = parseSectionPairs(fixture('netstat-single-line.txt'), 'f');
    assert.deepEqual(r.issues, ['f line 1: "TcpExt:" header has no values line']);
    assert.equal(r.value.size, 0);
  });

  it('reports a missing values line at the end and keeps the sections before it', () => {
    const r = parseSectionPairs(fixture('snmp-missing-values-line.txt'), 'snmp');
    assert.deepEqual(r.issues, ['snmp line 5: "Udp:" header has no values line']);
    assert.equal(r.value.get('Tcp')?.get('CurrEstab'), 3);
    assert.equal(r.value.get('Ip')?.get('InDiscards'), 2);
  });

  it('keeps unknown sections without complaint', () => {
    const r = parseSectionPairs(fixture('netstat-unknown-section.txt'), 'f');
    assert.deepEqual(r.issues, []);
    assert.equal(r.value.get('FooExt')?.get('B'), 2);
    assert.equal(r.value.get('TcpExt')?.get('TCPTimeouts'), 8);
  });

  it('resynchronises after a header followed by another section', () => {
    const r = parseSectionPairs(fixture('netstat-prefix-mismatch.txt'), 'f');
    assert.deepEqual(r.issues, ['f line 2: "TcpExt:" header is followed by "IpExt:" values', 'f line 2: "IpExt:" values without a header line']);
    assert.equal(r.value.has('TcpExt'), false);
    assert.equal(r.value.get('IpExt')?.get('InCsumErrors'), 5);
  });

  it('reports garbage lines and non-numbers, keeping the good counters', () => {
    const r = parseSectionPairs(fixture('netstat-garbage.txt'), 'g');
    assert.deepEqual(r.issues, ['g line 1: expected "Section: names…", got "this is not a counter file"', 'g line 3: "TcpExt: TCPTimeouts" is not a number: "x"']);
    assert.deepEqual([...(r.value.get('TcpExt') ?? [])], [['ListenDrops', 1], ['TCPLossProbes', 3]]);
    assert.equal(r.value.get('MPTcpExt')?.get('RmAddrDrop'), 9);
  });

  it('reports an empty file', () => {
    const r = parseSectionPairs(fixture('empty.txt'), '/proc/net/snmp');
    assert.deepEqual(r.issues, ['/proc/net/snmp: empty file']);
    assert.equal(r.value.size, 0);
  });

  it('caps the messages of a file full of garbage', () => {
    const r = parseSectionPairs('junk\n'.repeat(1000), 'f');
    assert.equal(r.issues.length, 6);
    assert.equal(r.issues[5], 'f: 995 more problem(s)');
  });
});

describe('parseNameValueLines', () => {
  it('reads a recorded /proc/net/snmp6', () => {
    const r = parseNameValueLines(fixture('snmp6.txt'), '/proc/net/snmp6');
    assert.deepEqual(r.issues, []);
    assert.equal(r.value.get('Ip6InReceives'), 3);
    assert.equal(r.value.get('Udp6InDatagrams'), 0);
    assert.ok(r.value.size >= 80);
  });

  it('reports bad lines with their numbers', () => {
    const r = parseNameValueLines(fixture('snmp6-garbage.txt'), 's6');
    assert.deepEqual(r.issues, [
      's6 line 3: expected "Name value", got "Udp6InDatagrams"',
      's6 line 4: expected "Name value", got "Udp6NoPorts 1 2"',
      's6 line 5: expected "Name value", got "???\\t5"',
    ]);
    assert.deepEqual([...r.value], [['Ip6InReceives', 10], ['Ip6InDiscards', 2], ['Udp6InErrors', -1]]);
  });

  it('reports an empty file', () => {
    assert.deepEqual(parseNameValueLines('', 's6').issues, ['s6: empty file']);
  });
});
