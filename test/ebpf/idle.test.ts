/**
 * The idle agent wakes on data and on the metrics interval only: with the default plugins, in a
 * namespace with no traffic, the whole process (every thread) wakes fewer than 5 times a second.
 * (Retina's own agent: 4-10; before, prom-client's 10 ms event-loop monitor, a 100 ms drain timer
 * per ring and the thread-pool trips of linuxutil's reads made it about 110.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { wakeups } from '../e2e/proc-stats.js';
import { Netns, NsAgent, requireKernel, sleep, vethPair } from './netns.js';

const DEFAULT_PLUGINS = ['linuxutil', 'packetforward', 'dropreason', 'dns'];
const WINDOW_MS = 10_000;

test('an idle agent with the default plugins wakes fewer than 5 times a second', async (t) => {
  requireKernel();
  const ns = new Netns('idle');
  const peer = new Netns('idle-peer');
  try {
    vethPair(ns, 'rtbpf-id0', '10.235.7.1', peer, 'rtbpf-id1', '10.235.7.2');
    ns.run('ip', ['route', 'add', 'default', 'via', '10.235.7.2']);
    await using agent = new NsAgent(ns, '');
    await agent.started(DEFAULT_PLUGINS);
    // Start-up's last compilations and collections: V8's memory reducer runs about 25 s after start.
    await sleep(30_000);
    const w0 = wakeups(agent.proc.pid);
    await sleep(WINDOW_MS);
    const perSecond = (wakeups(agent.proc.pid) - w0) / (WINDOW_MS / 1000);
    t.diagnostic(`wake-ups per second: ${perSecond.toFixed(1)}`);
    assert.ok(perSecond < 5, `the idle agent woke ${perSecond.toFixed(1)} times a second`);
  } finally {
    ns.destroy();
    peer.destroy();
  }
});
