/**
 * What an idle agent costs. It wakes on data and on the metrics interval only: with the default plugins, in a
 * namespace with no traffic, the whole process (every thread) wakes fewer than 5 times a second.
 * (Retina's own agent: 4-10; before, prom-client's 10 ms event-loop monitor, a 100 ms drain timer
 * per ring and the thread-pool trips of linuxutil's reads made it about 110.)
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { wakeupsByThread } from '../e2e/proc-stats.js';
import { routedNetns } from '../bundle/serving.js';
import { NsAgent, requireKernel, sleep } from './netns.js';

const DEFAULT_PLUGINS = ['linuxutil', 'packetforward', 'dropreason', 'dns'];
const WINDOW_MS = 10_000;

test('an idle agent with the default plugins wakes fewer than 5 times a second', async (t) => {
  requireKernel();
  const { ns, peer } = routedNetns('idle', 73);
  try {
    await using agent = new NsAgent(ns, '');
    await agent.started(DEFAULT_PLUGINS);
    // Start-up's last compilations and collections: V8's memory reducer runs about 25 s after start.
    await sleep(30_000);
    // Two windows at most: the host is shared (a test before this one, a build), so a burst that is not
    // the agent's own doing can land in one; a timer or a busy loop of the agent's shows in both.
    const windows: string[] = [];
    for (let i = 0; i < 2; i++) {
      const w0 = wakeupsByThread(agent.proc.pid);
      await sleep(WINDOW_MS);
      const w1 = wakeupsByThread(agent.proc.pid);
      const perThread = [...w1].map(([name, n]) => [name, (n - (w0.get(name) ?? 0)) / (WINDOW_MS / 1000)] as const).filter(([, r]) => r > 0).sort((a, b) => b[1] - a[1]);
      const perSecond = perThread.reduce((s, [, r]) => s + r, 0);
      windows.push(`${perSecond.toFixed(1)}/s (${perThread.map(([name, r]) => `${name} ${r.toFixed(1)}`).join(', ') || 'none'})`);
      t.diagnostic(`wake-ups per second, window ${i + 1}: ${windows[i]}`);
      if (perSecond < 5) return;
    }
    assert.fail(`the idle agent woke 5 or more times a second in both ${WINDOW_MS / 1000} s windows: ${windows.join('; ')}`);
  } finally {
    ns.destroy();
    peer.destroy();
  }
});

/**
 * Node's modules for TLS, crypto, HTTPS clients and compression are several MB of RSS each group
 * (their code, and the pages of the node binary they touch: bench/agent/footprint.bench.ts). The
 * default agent uses none of them: koffi is loaded without its download helpers, prom-client
 * without its Pushgateway and cluster aggregator, and metricsTLS/metricsAuth load theirs only when
 * on. Checked after start-up and a scrape, from the agent's own process.moduleLoadList.
 */
test('an idle agent with the default plugins loads no TLS, crypto, HTTPS client or zlib module', async () => {
  requireKernel();
  const dir = mkdtempSync(join(tmpdir(), 'rt-idle-mods-'));
  const out = join(dir, 'modules.json');
  const preload = join(dir, 'preload.mjs');
  writeFileSync(preload, `import { writeFileSync } from 'node:fs';\nprocess.on('exit', () => writeFileSync(${JSON.stringify(out)}, JSON.stringify(process.moduleLoadList)));\n`);
  const { ns, peer } = routedNetns('idlemods', 74);
  try {
    {
      await using agent = new NsAgent(ns, '', undefined, { NODE_OPTIONS: `--import=${preload}` });
      await agent.started(DEFAULT_PLUGINS);
      assert.match(agent.metrics(), /networkobservability_/);
    }
    const loaded = JSON.parse(readFileSync(out, 'utf8')) as string[];
    assert.ok(loaded.includes('NativeModule http'), 'the list is the agent\'s (it serves /metrics over node:http)');
    const heavy = loaded.filter((m) => /^NativeModule (crypto|tls|https|zlib|http2|internal\/deps\/undici\/undici)$/.test(m));
    assert.deepEqual(heavy, [], `the idle agent loaded ${heavy.join(', ')}`);
  } finally {
    ns.destroy();
    peer.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});
