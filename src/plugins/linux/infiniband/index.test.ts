/**
 * The infiniband definition started with a real PluginContext over a copy of the fixture tree:
 * exact exposition, degraded/ok status, a device that disappears, and a clean stop.
 */
import assert from 'node:assert/strict';
import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { agentConfig, agentKeys, collectSpecs, loadValues, type AgentConfig } from '../../../config/index.js';
import { discardFlows } from '../../../../test/fakes/flows.js';
import { silentLogger } from '../../../log/index.js';
import { catalog, createMetricsRegistry, type MetricsRegistry } from '../../../metrics/index.js';
import { PermanentError, everyIp, liveResourceStacks, type PluginContext, type StatusReporter } from '../../../plugin/index.js';
import { createInfinibandPlugin, infiniband, type InfinibandConfig } from './index.js';

const FIXTURE = fileURLToPath(new URL('../../../../../test/fixtures/infiniband/sys', import.meta.url));
const COUNTERS = catalog.infinibandCounterStats.name;
const STATUS = catalog.infinibandStatusParams.name;

type Report = { kind: 'ok' } | { kind: 'degraded'; reason: string } | { kind: 'failed'; error: unknown };

/** A StatusReporter that records every call and lets a test wait for the n-th one. */
function recordingStatus(): StatusReporter & { readonly calls: Report[]; reached(n: number): Promise<void> } {
  const calls: Report[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const push = (r: Report): void => {
    calls.push(r);
    for (const w of waiters.filter((x) => calls.length >= x.n)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  };
  return {
    calls,
    ok: () => push({ kind: 'ok' }),
    degraded: (_source, reason) => push({ kind: 'degraded', reason }),
    failed: (error) => push({ kind: 'failed', error }),
    reached(n) {
      if (calls.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`waited 5 s for status report #${n}, have ${calls.length}`)), 5000);
        waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) });
      });
    },
  };
}

function agent(intervalMs: string): AgentConfig {
  const keys = agentKeys({ os: 'linux', names: ['infiniband'], defaults: [] });
  return agentConfig(keys, loadValues({ env: { RETINA_METRICSINTERVALDURATION: intervalMs }, specs: collectSpecs(keys) }));
}

function contextFor(metrics: MetricsRegistry, status: StatusReporter, abort: AbortController, intervalMs = '100ms'): PluginContext<InfinibandConfig> {
  return {
    config: {},
    agent: agent(intervalMs),
    log: silentLogger,
    metrics,
    self: { lostEvents: () => undefined, parsedPackets: () => undefined },
    flows: discardFlows,
    interest: everyIp,
    signal: abort.signal,
    status,
  };
}

/** The exposition's sample lines of one family, sorted. */
async function series(metrics: MetricsRegistry, family: string): Promise<string[]> {
  const { body } = await metrics.expose();
  return body.split('\n').filter((l) => l.startsWith(`${family}{`)).sort();
}

const c = (stat: string, device: string, port: string, value: string): string =>
  `${COUNTERS}{statistic_name="${stat}",device="${device}",port="${port}"} ${value}`;

const ZEROS_PORT2 = [
  'excessive_buffer_overrun_errors', 'link_downed', 'link_error_recovery', 'local_link_integrity_errors', 'port_rcv_data',
  'port_rcv_errors', 'port_rcv_packets', 'port_rcv_remote_physical_errors', 'port_xmit_data', 'port_xmit_discards',
  'port_xmit_packets', 'port_xmit_wait', 'symbol_error',
];

const MLX5_0 = [
  c('VL15_dropped', 'mlx5_0', '1', '0'),
  c('excessive_buffer_overrun_errors', 'mlx5_0', '1', '0'),
  c('link_downed', 'mlx5_0', '1', '1'),
  c('link_error_recovery', 'mlx5_0', '1', '0'),
  c('local_link_integrity_errors', 'mlx5_0', '1', '0'),
  c('port_rcv_data', 'mlx5_0', '1', '48779340281'),
  c('port_rcv_errors', 'mlx5_0', '1', '3'),
  c('port_rcv_packets', 'mlx5_0', '1', '170345281'),
  c('port_rcv_remote_physical_errors', 'mlx5_0', '1', '0'),
  c('port_xmit_data', 'mlx5_0', '1', '51229134802'),
  c('port_xmit_discards', 'mlx5_0', '1', '2'),
  c('port_xmit_packets', 'mlx5_0', '1', '172210043'),
  c('port_xmit_wait', 'mlx5_0', '1', '91834'),
  c('symbol_error', 'mlx5_0', '1', '0'),
  // port 2: VL15_dropped holds "N/A" and has no series
  ...ZEROS_PORT2.map((s) => c(s, 'mlx5_0', '2', '0')),
];

const MLX5_1 = [
  c('VL15_dropped', 'mlx5_1', '1', '0'),
  c('excessive_buffer_overrun_errors', 'mlx5_1', '1', '0'),
  c('link_downed', 'mlx5_1', '1', '0'),
  c('link_error_recovery', 'mlx5_1', '1', '0'),
  c('local_link_integrity_errors', 'mlx5_1', '1', '0'),
  c('port_rcv_data', 'mlx5_1', '1', '18446744073709552000'),
  c('port_rcv_errors', 'mlx5_1', '1', '0'),
  c('port_rcv_packets', 'mlx5_1', '1', '92233720'),
  c('port_rcv_remote_physical_errors', 'mlx5_1', '1', '0'),
  c('port_xmit_data', 'mlx5_1', '1', '734003200'),
  c('port_xmit_discards', 'mlx5_1', '1', '0'),
  c('port_xmit_packets', 'mlx5_1', '1', '88110'),
  // port_xmit_wait is a dangling symlink and has no series
  c('symbol_error', 'mlx5_1', '1', '5'),
];

const STATUS_IB0 = [
  `${STATUS}{statistic_name="link_down_reason",interface_name="ib0"} 0`,
  `${STATUS}{statistic_name="lro_timeout",interface_name="ib0"} 32`,
];

void describe('infiniband plugin', () => {
  let tmp: string;
  let root: string;
  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'retina-ib-'));
    root = join(tmp, 'sys');
    // verbatimSymlinks keeps the class links relative, so the copy is self-contained.
    await cp(FIXTURE, root, { recursive: true, verbatimSymlinks: true });
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  void it('is the Linux definition Retina has: off by default, hooked on /sys/class/infiniband', () => {
    assert.equal(infiniband.name, 'infiniband');
    assert.equal(infiniband.os, 'linux');
    assert.equal(infiniband.defaultEnabled, false);
    assert.deepEqual(infiniband.hooks, [
      { kind: 'file', path: '/sys/class/infiniband' },
      { kind: 'file', path: '/sys/class/net', optional: true },
    ]);
    assert.deepEqual(infiniband.emits, [catalog.infinibandCounterStats, catalog.infinibandStatusParams]);
    assert.deepEqual(Object.keys(infiniband.config), []);
  });

  void it('exports the fixture exactly, degrades naming what it could not read, follows removals, stops clean', async () => {
    const stacksBefore = liveResourceStacks();
    const metrics = createMetricsRegistry({ processMetrics: false });
    const status = recordingStatus();
    const abort = new AbortController();
    const handle = await createInfinibandPlugin({ root }).start(contextFor(metrics, status, abort));
    try {
      // The first read happens during start.
      assert.equal(status.calls.length, 1);
      const first = status.calls[0];
      assert.equal(first?.kind, 'degraded');
      const reason = first.kind === 'degraded' ? first.reason : '';
      assert.equal(
        reason,
        `could not read 2 InfiniBand sysfs entries: ${root}/class/infiniband/mlx5_0/ports/2/counters/VL15_dropped (not an unsigned integer: "N/A"), ` +
          `${root}/class/infiniband/mlx5_1/ports/1/counters/port_xmit_wait (ENOENT)`,
      );
      assert.deepEqual(await series(metrics, COUNTERS), [...MLX5_0, ...MLX5_1].sort());
      // ib0 only: ib1 has no debug/, eth0 and lo are not ib*.
      assert.deepEqual(await series(metrics, STATUS), STATUS_IB0);

      // mlx5_1 is unplugged: its class link goes away. Two more reports guarantee one whole tick after the removal.
      await rm(join(root, 'class/infiniband/mlx5_1'));
      let seen = status.calls.length;
      await status.reached(seen + 2);
      assert.deepEqual(await series(metrics, COUNTERS), [...MLX5_0].sort());
      assert.deepEqual(status.calls.at(-1), {
        kind: 'degraded',
        reason: `could not read 1 InfiniBand sysfs entry: ${root}/class/infiniband/mlx5_0/ports/2/counters/VL15_dropped (not an unsigned integer: "N/A")`,
      });

      // The garbage is fixed: everything reads, status is ok, the value appears.
      await writeFile(join(root, 'class/infiniband/mlx5_0/ports/2/counters/VL15_dropped'), '7\n');
      seen = status.calls.length;
      await status.reached(seen + 2);
      assert.deepEqual(status.calls.at(-1), { kind: 'ok' });
      assert.deepEqual(await series(metrics, COUNTERS), [...MLX5_0, c('VL15_dropped', 'mlx5_0', '2', '7')].sort());
      assert.deepEqual(await series(metrics, STATUS), STATUS_IB0);

      // The whole class directory vanishes (driver unloaded): degraded, and no stale series.
      await rm(join(root, 'class/infiniband'), { recursive: true });
      seen = status.calls.length;
      await status.reached(seen + 2);
      assert.deepEqual(status.calls.at(-1), { kind: 'degraded', reason: `could not read 1 InfiniBand sysfs entry: ${root}/class/infiniband (ENOENT)` });
      assert.deepEqual(await series(metrics, COUNTERS), []);
      assert.deepEqual(await series(metrics, STATUS), STATUS_IB0);
      assert.ok(!status.calls.some((r) => r.kind === 'failed'), 'a read problem never fails the plugin');
    } finally {
      abort.abort();
      await handle[Symbol.asyncDispose]();
    }
    assert.equal(liveResourceStacks(), stacksBefore);
    // Stopped: no series left behind, and no more reports.
    assert.deepEqual(await series(metrics, STATUS), []);
    const reports = status.calls.length;
    await new Promise((r) => setTimeout(r, 250));
    assert.equal(status.calls.length, reports);
    // A second stop is harmless.
    await handle[Symbol.asyncDispose]();
    assert.equal(liveResourceStacks(), stacksBefore);
  });

  void it('refuses to start, permanently, where there is no /sys/class/infiniband, leaving nothing alive', async () => {
    const stacksBefore = liveResourceStacks();
    const empty = join(tmp, 'no-infiniband');
    const status = recordingStatus();
    const start = createInfinibandPlugin({ root: empty }).start(contextFor(createMetricsRegistry({ processMetrics: false }), status, new AbortController()));
    await assert.rejects(start, (e: unknown) => e instanceof PermanentError && e.message.includes(`${empty}/class/infiniband is missing`));
    assert.equal(liveResourceStacks(), stacksBefore);
    assert.deepEqual(status.calls, []);
  });
});
