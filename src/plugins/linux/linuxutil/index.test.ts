import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { ConfigErrors, agentConfig, agentKeys, collectSpecs, loadValues, pick } from '../../../config/index.js';
import { discardFlows } from '../../../../test/fakes/flows.js';
import { silentLogger } from '../../../log/index.js';
import { createMetricsRegistry } from '../../../metrics/index.js';
import { everyIp, liveResourceStacks, type PluginContext } from '../../../plugin/index.js';
import { plugins } from '../index.js';
import type { LinuxutilConfig } from './config.js';
import { LINK_STAT_NAMES, type LinkInfo } from '../../../ffi/linux/netlink.js';
import { createLinuxutilPlugin, linuxutil } from './index.js';

const keys = agentKeys({ os: 'linux', names: ['linuxutil'], defaults: ['linuxutil'] });

function load(yaml: string) {
  const values = loadValues({ fileText: yaml, env: {}, specs: collectSpecs(keys, linuxutil.config) });
  return { agent: agentConfig(keys, values), config: pick(linuxutil.config, values) as LinuxutilConfig };
}

/** A context from the real registry, logger and flow sink, with a status recorder. */
function context(yaml: string) {
  const { agent, config } = load(yaml);
  const registry = createMetricsRegistry({ processMetrics: false });
  const statuses: string[] = [];
  const abort = new AbortController();
  const ctx: PluginContext<LinuxutilConfig> = {
    config, agent, log: silentLogger, metrics: registry, flows: discardFlows, interest: everyIp, signal: abort.signal,
    self: { lostEvents: () => undefined, parsedPackets: () => undefined },
    status: {
      ok: () => void statuses.push('ok'),
      degraded: (_source, reason) => void statuses.push(`degraded: ${reason}`),
      failed: (err) => void statuses.push(`failed: ${String(err)}`),
    },
  };
  return { ctx, registry, statuses, abort };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('linuxutil definition', () => {
  it('is in the Linux plugin list once, with its hooks and families', () => {
    assert.equal(plugins.filter((p) => p.name === 'linuxutil').length, 1);
    assert.equal(linuxutil.os, 'linux');
    assert.equal(linuxutil.defaultEnabled, true);
    assert.deepEqual(linuxutil.hooks.map((h) => (h.kind === 'file' ? `${h.path}${h.optional ? '?' : ''}` : h.kind)), [
      '/proc/net/tcp', '/proc/net/tcp6?', '/proc/net/udp', '/proc/net/udp6?', '/proc/net/netstat', '/proc/net/snmp', '/proc/net/snmp6?',
    ]);
    assert.deepEqual(linuxutil.emits.map((m) => m.name.replace('networkobservability_', '')), [
      'tcp_state', 'tcp_connection_remote', 'tcp_connection_stats', 'ip_connection_stats', 'udp_connection_stats', 'interface_stats',
    ]);
  });

  it('validates interfaceStatsMode (default all_interfaces), naming the key', () => {
    assert.equal(load('').config.interfaceStatsMode, 'all_interfaces');
    assert.equal(load('interfaceStatsMode: per_interface').config.interfaceStatsMode, 'per_interface');
    assert.throws(() => load('interfaceStatsMode: per_pod'), (e: unknown) => e instanceof ConfigErrors && /interfaceStatsMode/.test(e.message) && /per_interface_with_veths/.test(e.message));
  });

  it('validates interfaceStatsExclude', () => {
    assert.deepEqual(load('').config.interfaceStatsExclude, []);
    assert.deepEqual(load('interfaceStatsExclude: [lxc*, cali*]').config.interfaceStatsExclude, ['lxc*', 'cali*']);
    assert.throws(() => load('interfaceStatsExclude: ["a b"]'), (e: unknown) => e instanceof ConfigErrors && /interfaceStatsExclude.*bad: a b/.test(e.message));
  });
});

describe('linuxutil on this host', () => {
  it('publishes all six families at start and on each tick, and stops without leaks', async () => {
    const firstIf = readdirSync('/sys/class/net').sort().find((n) => n !== 'lo' && n !== 'bonding_masters');
    assert.ok(firstIf, 'this host needs an interface besides lo');
    const { ctx, registry, statuses } = context('metricsIntervalDuration: 100ms\ninterfaceStatsExclude: [ifb*]\ninterfaceStatsMode: per_interface_with_veths\n');
    const before = liveResourceStacks();
    const handle = await linuxutil.start(ctx);
    assert.equal(liveResourceStacks(), before + 1);
    assert.deepEqual(statuses, ['ok'], 'read once at start, all files read');
    const body = (await registry.expose()).body;
    for (const series of [
      'networkobservability_tcp_state{state="ESTABLISHED"}',
      'networkobservability_tcp_state{state="CLOSE"}',
      'networkobservability_tcp_connection_remote{address="AllIPs"}',
      'networkobservability_tcp_connection_stats{statistic_name="ListenDrops"}',
      'networkobservability_tcp_connection_stats{statistic_name="ActiveOpens"}',
      'networkobservability_ip_connection_stats{statistic_name="InReceives"}',
      'networkobservability_ip_connection_stats{statistic_name="InCsumErrors"}',
      'networkobservability_udp_connection_stats{statistic_name="ACTIVE"}',
      'networkobservability_udp_connection_stats{statistic_name="NoPorts"}',
      `networkobservability_interface_stats{interface_name="${firstIf}",statistic_name="rx_packets"}`,
    ]) {
      assert.match(body, new RegExp(`^${series.replace(/[{}[\]().*+?^$|\\]/g, '\\$&')} \\d+$`, 'm'), series);
    }
    assert.doesNotMatch(body, /interface_name="lo"/);
    assert.doesNotMatch(body, /interface_name="ifb/, 'excluded by interfaceStatsExclude');
    assert.doesNotMatch(body, /all_interfaces/);
    await sleep(550);
    assert.ok(statuses.length >= 3, `ticks every 100 ms (saw ${statuses.length})`);
    assert.ok(statuses.every((s) => s === 'ok'), statuses.join(', '));

    await handle[Symbol.asyncDispose]();
    await handle[Symbol.asyncDispose]();
    assert.equal(liveResourceStacks(), before, 'no stack left behind');
    const seen = statuses.length;
    await sleep(250);
    assert.equal(statuses.length, seen, 'no tick after stop');
  });

  it('starts again after a stop (start-stop-start-stop)', async () => {
    const before = liveResourceStacks();
    for (let i = 0; i < 2; i++) {
      const { ctx, statuses } = context('');
      const h = await linuxutil.start(ctx);
      assert.deepEqual(statuses, ['ok']);
      await h[Symbol.asyncDispose]();
    }
    assert.equal(liveResourceStacks(), before);
  });
});

describe('linuxutil status and stale series', () => {
  const FIXTURES = fileURLToPath(new URL('../../../../../test/fixtures/linuxutil/', import.meta.url));
  const root = mkdtempSync(join(tmpdir(), 'rtlu-plugin-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('is degraded while a file is missing, publishes the rest, drops series of what went away, and recovers', async () => {
    const net = join(root, 'proc', 'net');
    mkdirSync(net, { recursive: true });
    for (const f of ['tcp', 'tcp6', 'udp', 'udp6', 'netstat', 'snmp6']) copyFileSync(join(FIXTURES, `${f}.txt`), join(net, f));
    let links: LinkInfo[] = [{ name: 'rtlu-fake0', ifindex: 7, kind: 'veth', stats: LINK_STAT_NAMES.map((n) => (n === 'rx_packets' ? 41 : 0)) }];
    const plugin = createLinuxutilPlugin({ procRoot: join(root, 'proc'), links: () => links });
    const { ctx, registry, statuses } = context('metricsIntervalDuration: 100ms\ninterfaceStatsMode: per_interface_with_veths\n');
    const before = liveResourceStacks();
    const handle = await plugin.start(ctx);
    try {
      assert.equal(statuses.length, 1);
      assert.match(statuses[0] as string, new RegExp(`^degraded: could not read ${join(net, 'snmp')} \\(ENOENT`));
      let body = (await registry.expose()).body;
      assert.match(body, /tcp_state\{state="ESTABLISHED"\} 4$/m, 'sockets still published');
      assert.match(body, /tcp_connection_stats\{statistic_name="TCPTimeouts"\} 2$/m, 'netstat still published');
      assert.doesNotMatch(body, /statistic_name="ActiveOpens"/, 'nothing from the missing snmp');
      assert.match(body, /interface_stats\{interface_name="rtlu-fake0",statistic_name="rx_packets"\} 41$/m);

      copyFileSync(join(FIXTURES, 'snmp.txt'), join(net, 'snmp'));
      await until(() => statuses.at(-1) === 'ok');
      body = (await registry.expose()).body;
      assert.match(body, /tcp_connection_stats\{statistic_name="ActiveOpens"\} 150$/m);

      links = [];
      copyFileSync(join(FIXTURES, 'tcp-garbage.txt'), join(net, 'tcp'));
      await until(() => (statuses.at(-1) ?? '').startsWith('degraded: unparsed input'));
      assert.match(statuses.at(-1) as string, new RegExp(`${join(net, 'tcp')} line 4: unknown socket state 0x0C`));
      body = (await registry.expose()).body;
      assert.doesNotMatch(body, /rtlu-fake0/, 'a vanished interface loses its series');
      assert.match(body, /tcp_state\{state="ESTABLISHED"\} 3$/m, 'the good lines still count (0 + 3 from tcp6)');
    } finally {
      await handle[Symbol.asyncDispose]();
    }
    assert.equal(liveResourceStacks(), before);
  });
});

async function until(cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}
