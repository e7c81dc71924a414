/**
 * linuxutil against a real kernel, as root: a fresh network namespace (rtlu-*) with a veth pair to a
 * second namespace, TCP connections held open inside it, and the plugin's readers run inside it
 * (`ip netns exec … node linuxutil-probe.js`), cross-checked with ss, nstat, /sys and ethtool -S
 * run in the same namespace. It fails, never skips, when it cannot run.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import type { Reading } from '../../src/plugins/linux/linuxutil/collect.js';
import { IP_STATS, TCP_STATS, UDP_STATS } from '../../src/plugins/linux/linuxutil/curated.js';
import { TCP_STATES } from '../../src/plugins/linux/linuxutil/sockets.js';

const NS = `rtlu-${process.pid}`;
const PEER = `rtlu-${process.pid}-p`;
const IF = 'rtlu-veth0';
const PEER_IF = 'rtlu-veth1';
const ADDR = '10.231.0.1';
const PEER_ADDR = '10.231.0.2';
const N4 = 20;
const N6 = 5;
const N = N4 + N6;
const HALF = 5;
const UDP = 3;
const PROBE = fileURLToPath(new URL('./linuxutil-probe.js', import.meta.url));
const HOLDER = fileURLToPath(new URL('./tcp-holder.js', import.meta.url));

const run = (cmd: string, ...args: string[]): string => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const inNs = (cmd: string, ...args: string[]): string => run('ip', 'netns', 'exec', NS, cmd, ...args);
const probe = (): Reading => JSON.parse(inNs(process.execPath, PROBE)) as Reading;
const rows = (r: Reading, family: keyof Reading, label: string): Map<string, number> =>
  new Map((r[family] as readonly (readonly [Record<string, string>, number])[]).map(([l, v]) => [l[label] as string, v]));
const ifRows = (r: Reading, ifname: string): Map<string, number> =>
  new Map(r.interfaceStats.filter(([l]) => l['interface_name'] === ifname).map(([l, v]) => [l['statistic_name'] as string, v]));

/** ss's state names → go-netstat's. */
const SS_STATES: Record<string, string> = {
  ESTAB: 'ESTABLISHED', 'SYN-SENT': 'SYN_SENT', 'SYN-RECV': 'SYN_RECV', 'FIN-WAIT-1': 'FIN_WAIT1', 'FIN-WAIT-2': 'FIN_WAIT2',
  'TIME-WAIT': 'TIME_WAIT', UNCONN: 'CLOSE', 'CLOSE-WAIT': 'CLOSE_WAIT', 'LAST-ACK': 'LAST_ACK', LISTEN: 'LISTEN', CLOSING: 'CLOSING',
};
function ssTcp(): { states: Map<string, number>; withPeer: number } {
  const states = new Map<string, number>(TCP_STATES.slice(1).map((s) => [s, 0]));
  let withPeer = 0;
  for (const line of inNs('ss', '-tanH').split('\n').filter((l) => l.trim())) {
    const f = line.trim().split(/\s+/);
    const name = SS_STATES[f[0] as string];
    assert.ok(name, `unknown ss state in ${JSON.stringify(line)}`);
    states.set(name, (states.get(name) ?? 0) + 1);
    if (!/^(0\.0\.0\.0|\[::\]|\*):\*$/.test(f[4] as string)) withPeer++;
  }
  return { states, withPeer };
}

/** `nstat -asz`: absolute values, zeros included, history untouched. */
function nstat(): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of inNs('nstat', '-asz').split('\n')) {
    const m = /^(\w+)\s+(-?\d+)/.exec(line);
    if (m) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}
/** nstat's name for a curated counter: section prefix + name (snmp6 names carry it already). */
const nstatName = (section: string, name: string): string => (section === 'Ip6' || section === 'Udp6' ? name : `${section}${name}`);
const NSTAT_SKIPS = new Set(['TcpCurrEstab']);
/** Counters that move with any packet: compared with >= (nstat reads after the probe). */
const BUSY = /Segs|Octets|Pkts|Receives|Delivers|Requests|Datagrams|Transmits/;

function sysStats(ifname: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of inNs('sh', '-c', `cd /sys/class/net/${ifname}/statistics && grep -H . *`).split('\n').filter(Boolean)) {
    const [k, v] = line.split(':');
    out.set(k as string, Number(v));
  }
  return out;
}
function ethtoolS(ifname: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of inNs('ethtool', '-S', ifname).split('\n')) {
    const m = /^\s+(\S+):\s+(\d+)$/.exec(line);
    if (m) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

let holder: ChildProcessWithoutNullStreams | undefined;
let holderLines: AsyncIterator<string> | undefined;
async function holderSays(want: string): Promise<void> {
  const t = setTimeout(() => holder?.kill(), 15_000);
  try {
    const next = await holderLines?.next();
    assert.equal(next?.value, want, `tcp-holder should print ${want}`);
  } finally {
    clearTimeout(t);
  }
}

describe('linuxutil in a network namespace (live kernel, root)', () => {
  let baseline: Reading;

  before(() => {
    assert.equal(process.getuid?.(), 0, 'the live linuxutil test must run as root (it creates network namespaces)');
    for (const tool of [['ip', '-V'], ['ss', '-V'], ['nstat', '-V'], ['ethtool', '--version']]) run(tool[0] as string, ...tool.slice(1));
    run('ip', 'netns', 'add', NS);
    run('ip', 'netns', 'add', PEER);
    run('ip', '-n', NS, 'link', 'set', 'lo', 'up');
    run('ip', '-n', NS, 'link', 'add', IF, 'type', 'veth', 'peer', 'name', PEER_IF, 'netns', PEER);
    // No IPv6 on the veth: its neighbour discovery and MLD traffic would make the counters move.
    inNs('sysctl', '-qw', `net.ipv6.conf.${IF}.disable_ipv6=1`);
    run('ip', 'netns', 'exec', PEER, 'sysctl', '-qw', `net.ipv6.conf.${PEER_IF}.disable_ipv6=1`);
    run('ip', '-n', NS, 'addr', 'add', `${ADDR}/24`, 'dev', IF);
    run('ip', '-n', PEER, 'addr', 'add', `${PEER_ADDR}/24`, 'dev', PEER_IF);
    run('ip', '-n', NS, 'link', 'set', IF, 'up');
    run('ip', '-n', PEER, 'link', 'set', PEER_IF, 'up');
    baseline = probe();
  });

  after(async () => {
    if (holder && holder.exitCode === null) {
      holder.stdin.end();
      holder.kill();
      await once(holder, 'exit').catch(() => undefined);
    }
    for (const ns of [NS, PEER]) {
      try {
        run('ip', 'netns', 'del', ns);
      } catch {
        // already gone (setup failed before creating it)
      }
    }
    const left = run('ip', 'netns', 'list').split('\n').filter((l) => l.startsWith(`rtlu-${process.pid}`));
    assert.deepEqual(left, [], 'test namespaces removed');
  });

  it('reads a fresh namespace completely: no failures, no parse issues, only the veth', () => {
    assert.deepEqual(baseline.failures, []);
    assert.deepEqual(baseline.issues, []);
    assert.equal(rows(baseline, 'tcpState', 'state').get('ESTABLISHED'), 0);
    assert.deepEqual([...new Set(baseline.interfaceStats.map(([l]) => l['interface_name']))], [IF]);
  });

  it(`counts ${N} connections as ${2 * N} ESTABLISHED sockets (IPv4 and IPv6) and agrees with ss and nstat`, async () => {
    holder = spawn('ip', ['netns', 'exec', NS, process.execPath, HOLDER, ADDR, '::1', String(N4), String(N6), String(UDP)]);
    holder.stderr.on('data', (d: Buffer) => process.stderr.write(`tcp-holder: ${d.toString()}`));
    holderLines = createInterface({ input: holder.stdout })[Symbol.asyncIterator]();
    await holderSays('ready');

    const r = probe();
    const ss = ssTcp();
    const states = rows(r, 'tcpState', 'state');
    const base = rows(baseline, 'tcpState', 'state');
    assert.equal((states.get('ESTABLISHED') ?? 0) - (base.get('ESTABLISHED') ?? 0), 2 * N);
    assert.equal((states.get('LISTEN') ?? 0) - (base.get('LISTEN') ?? 0), 1);
    assert.deepEqual(states, ss.states, 'every tcp_state count equals ss -tan in the namespace');
    assert.equal(rows(r, 'tcpConnectionRemote', 'address').get('AllIPs'), ss.withPeer);
    assert.equal(ss.withPeer, 2 * N);
    const ssUdp = inNs('ss', '-uanH').split('\n').filter((l) => l.trim()).length;
    assert.equal(rows(r, 'udpConnectionStats', 'statistic_name').get('ACTIVE'), ssUdp);
    assert.equal(ssUdp, UDP);
    checkAgainstNstat(r, nstat());
    assert.equal(rows(r, 'tcpConnectionStats', 'statistic_name').get('ActiveOpens'), N);
    assert.equal(rows(r, 'tcpConnectionStats', 'statistic_name').get('PassiveOpens'), N);
    assert.equal(rows(r, 'tcpConnectionStats', 'statistic_name').get('CurrEstab'), 2 * N);
  });

  it(`sees ${HALF} half-closed connections as FIN_WAIT2 and CLOSE_WAIT, as ss does`, async () => {
    holder?.stdin.write(`halfclose ${HALF}\n`);
    await holderSays('halfclosed');
    const r = probe();
    const ss = ssTcp();
    const states = rows(r, 'tcpState', 'state');
    assert.equal(states.get('ESTABLISHED'), 2 * (N - HALF));
    assert.equal(states.get('FIN_WAIT2'), HALF);
    assert.equal(states.get('CLOSE_WAIT'), HALF);
    assert.deepEqual(states, ss.states);
    // The kernel's CurrEstab counts ESTABLISHED and CLOSE_WAIT.
    assert.equal(rows(r, 'tcpConnectionStats', 'statistic_name').get('CurrEstab'), 2 * (N - HALF) + HALF);
    checkAgainstNstat(r, nstat());
  });

  it('reports the veth per interface as /sys and ethtool -S do, and rx_packets grows with traffic across it', async () => {
    const r1 = probe();
    const sys = sysStats(IF);
    const mine = ifRows(r1, IF);
    assert.ok(sys.size >= 20, `statistics files of ${IF}`);
    for (const [name, v] of sys) {
      const got = mine.get(name);
      assert.notEqual(got, undefined, `interface_stats has ${name}`);
      if (/packets|bytes/.test(name)) assert.ok(v >= (got as number), `${name}: /sys ${v} >= plugin ${got}`);
      else assert.equal(got, v, name);
    }
    const eth = [...ethtoolS(IF)].filter(([n]) => /err|drop/i.test(n));
    assert.ok(eth.length >= 3, 'veth has err/drop ethtool stats');
    for (const [name, v] of eth) assert.equal(mine.get(name), v, `ethtool ${name}`);
    assert.equal(mine.has('peer_ifindex'), false, 'ethtool stats without err/drop are left out');
    assert.equal(mine.size, sys.size + eth.length);

    await echoAcrossVeth();
    const r2 = probe();
    const rx1 = mine.get('rx_packets') ?? NaN;
    const rx2 = ifRows(r2, IF).get('rx_packets') ?? NaN;
    assert.ok(rx2 >= rx1 + 3, `rx_packets grew by the peer's SYN-ACK, echo and FIN at least (${rx1} -> ${rx2})`);
    assert.ok((ifRows(r2, IF).get('tx_packets') ?? 0) >= (mine.get('tx_packets') ?? 0) + 3);
  });
});

/** A TCP echo exchange from the namespace to a server in the peer namespace, across the veth. */
async function echoAcrossVeth(): Promise<void> {
  const server = spawn('ip', ['netns', 'exec', PEER, process.execPath, '-e',
    `require('net').createServer((s) => s.pipe(s)).listen(7007, '${PEER_ADDR}', () => console.log('up'))`]);
  try {
    const lines = createInterface({ input: server.stdout })[Symbol.asyncIterator]();
    assert.equal((await lines.next()).value, 'up', 'echo server in the peer namespace');
    inNs(process.execPath, '-e',
      `const c = require('net').connect(7007, '${PEER_ADDR}', () => c.write('hello')); c.on('data', () => c.end()); c.on('close', () => process.exit(0)); setTimeout(() => process.exit(1), 5000)`);
  } finally {
    server.kill();
    await once(server, 'exit');
  }
}

/** Every curated counter the probe reported matches nstat: equal when quiet, <= when busy. */
function checkAgainstNstat(r: Reading, ns: Map<string, number>): void {
  const families = [
    ['tcpConnectionStats', TCP_STATS],
    ['ipConnectionStats', IP_STATS],
    ['udpConnectionStats', UDP_STATS],
  ] as const;
  let compared = 0;
  for (const [family, list] of families) {
    const mine = rows(r, family, 'statistic_name');
    for (const [section, name] of list) {
      const theirs = ns.get(nstatName(section, name));
      const got = mine.get(name);
      // nstat leaves out gauges (TcpCurrEstab); the tests check CurrEstab against the socket states.
      if (NSTAT_SKIPS.has(`${section}${name}`)) continue;
      assert.equal(got === undefined, theirs === undefined, `${section} ${name}: plugin ${got}, nstat ${theirs}`);
      if (got === undefined || theirs === undefined) continue;
      compared++;
      if (BUSY.test(name)) assert.ok(theirs >= got, `${name}: nstat ${theirs} >= plugin ${got}`);
      else assert.equal(got, theirs, `${section} ${name}`);
    }
  }
  assert.ok(compared >= TCP_STATS.length, `compared ${compared} counters with nstat`);
}
