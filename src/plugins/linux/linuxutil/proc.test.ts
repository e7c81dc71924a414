import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ALL_IPS, IP_STATS, TCP_STATS, UDP_ACTIVE, UDP_STATS, type Row } from './curated.js';
import { ParseCache, readProc } from './proc.js';

const FIXTURES = fileURLToPath(new URL('../../../../../test/fixtures/linuxutil/', import.meta.url));
const roots: string[] = [];
after(() => roots.forEach((r) => rmSync(r, { recursive: true, force: true })));

/** A fake /proc/<pid> with net/<name> copied from fixtures; `undefined` leaves the file out. */
function procRoot(files: Record<string, string | undefined>): string {
  const root = mkdtempSync(join(tmpdir(), 'rtlu-proc-'));
  roots.push(root);
  mkdirSync(join(root, 'net'));
  for (const [name, src] of Object.entries(files)) if (src !== undefined) copyFileSync(join(FIXTURES, src), join(root, 'net', name));
  return root;
}
const recorded = { tcp: 'tcp.txt', tcp6: 'tcp6.txt', udp: 'udp.txt', udp6: 'udp6.txt', netstat: 'netstat.txt', snmp: 'snmp.txt', snmp6: 'snmp6.txt' };
const value = (rows: readonly Row[], label: string, v: string): number | undefined => rows.find(([l]) => l[label] === v)?.[1];

describe('curated lists', () => {
  it('have unique statistic names per family', () => {
    for (const list of [TCP_STATS, IP_STATS, UDP_STATS]) {
      const names = list.map(([, n]) => n);
      assert.equal(new Set(names).size, names.length);
    }
  });
});

describe('readProc', () => {
  it('turns recorded files into the five protocol families, IPv6 included, zeros kept', async () => {
    const r = await readProc(procRoot(recorded));
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.issues, []);
    assert.equal(r.rows.tcpState.length, 11);
    assert.equal(value(r.rows.tcpState, 'state', 'ESTABLISHED'), 1 + 3);
    assert.equal(value(r.rows.tcpState, 'state', 'LISTEN'), 1 + 1);
    assert.equal(value(r.rows.tcpState, 'state', 'CLOSING'), 0);
    assert.deepEqual(r.rows.tcpConnectionRemote, [[{ address: ALL_IPS }, 27 + 3]]);
    assert.equal(value(r.rows.tcpConnectionStats, 'statistic_name', 'TCPTimeouts'), 2);
    assert.equal(value(r.rows.tcpConnectionStats, 'statistic_name', 'ActiveOpens'), 150);
    assert.equal(value(r.rows.tcpConnectionStats, 'statistic_name', 'ListenDrops'), 0);
    assert.equal(r.rows.tcpConnectionStats.length, TCP_STATS.length);
    assert.equal(value(r.rows.ipConnectionStats, 'statistic_name', 'InOctets'), 580304490);
    assert.equal(value(r.rows.ipConnectionStats, 'statistic_name', 'Ip6InReceives'), 3);
    assert.equal(r.rows.ipConnectionStats.length, IP_STATS.length);
    assert.deepEqual(r.rows.udpConnectionStats[0], [{ statistic_name: UDP_ACTIVE }, 0 + 1]);
    assert.equal(value(r.rows.udpConnectionStats, 'statistic_name', 'OutDatagrams'), 178);
    assert.equal(r.rows.udpConnectionStats.length, UDP_STATS.length + 1);
  });

  it('is content without the optional IPv6 files', async () => {
    const r = await readProc(procRoot({ ...recorded, tcp6: undefined, udp6: undefined, snmp6: undefined }));
    assert.deepEqual(r.failures, []);
    assert.equal(value(r.rows.tcpState, 'state', 'ESTABLISHED'), 1);
    assert.equal(value(r.rows.ipConnectionStats, 'statistic_name', 'Ip6InReceives'), undefined);
    assert.equal(value(r.rows.udpConnectionStats, 'statistic_name', 'Udp6InDatagrams'), undefined);
  });

  it('reports a missing required file and an unreadable one, and keeps the rest', async () => {
    const root = procRoot({ ...recorded, snmp: undefined, tcp: undefined });
    mkdirSync(join(root, 'net', 'tcp')); // reading a directory fails with EISDIR
    const r = await readProc(root);
    assert.deepEqual(r.failures.map((f) => [f.what, (f.error as NodeJS.ErrnoException).code]), [
      [join(root, 'net/snmp'), 'ENOENT'],
      [join(root, 'net/tcp'), 'EISDIR'],
    ]);
    assert.deepEqual(r.rows.tcpState, [], 'no IPv4 table: no tcp_state rather than a wrong one');
    assert.deepEqual(r.rows.tcpConnectionRemote, []);
    assert.equal(value(r.rows.tcpConnectionStats, 'statistic_name', 'TCPTimeouts'), 2, 'netstat still read');
    assert.equal(value(r.rows.tcpConnectionStats, 'statistic_name', 'ActiveOpens'), undefined, 'snmp missing');
  });

  it('passes parse problems on with file and line', async () => {
    const root = procRoot({ ...recorded, netstat: 'netstat-length-mismatch.txt' });
    writeFileSync(join(root, 'net', 'udp6'), '');
    const r = await readProc(root);
    assert.deepEqual(r.issues, [
      `${join(root, 'net/netstat')} line 2: "TcpExt:" has 4 names but 3 values`,
      `${join(root, 'net/udp6')}: empty file (expected a header line)`,
    ]);
    assert.equal(value(r.rows.ipConnectionStats, 'statistic_name', 'InCsumErrors'), 2);
  });
});

describe('readProc with a ParseCache', () => {
  it('parses a file again only when its text changed, and the change reaches the rows', async () => {
    const root = procRoot(recorded);
    const cache = new ParseCache();
    const first = await readProc(root, cache);
    assert.equal(cache.parses, 7, 'every file parsed once');
    const again = await readProc(root, cache);
    assert.equal(cache.parses, 7, 'unchanged files are not parsed');
    assert.deepEqual(again.rows, first.rows);
    // One more LISTEN socket in net/tcp: only that file is parsed again.
    const tcp = join(root, 'net', 'tcp');
    const text = readFileSync(tcp, 'utf8');
    writeFileSync(tcp, `${text.trimEnd()}\n  99: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n`);
    const changed = await readProc(root, cache);
    assert.equal(cache.parses, 8);
    assert.equal(value(changed.rows.tcpState, 'state', 'LISTEN'), (value(first.rows.tcpState, 'state', 'LISTEN') ?? 0) + 1);
    assert.deepEqual(changed.rows.ipConnectionStats, first.rows.ipConnectionStats);
  });
});
