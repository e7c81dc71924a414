import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../log/index.js';
import { createVethWatcher, type Link } from './veths.js';

function setup(): {
  links: Map<string, { ifindex: number; driver: string }>;
  events: string[];
  driverCalls: string[];
  failAttach: Set<string>;
  watcher: ReturnType<typeof createVethWatcher>;
} {
  const links = new Map<string, { ifindex: number; driver: string }>();
  const events: string[] = [];
  const driverCalls: string[] = [];
  const failAttach = new Set<string>();
  const log: Logger = {
    debug: () => undefined, info: (m, f) => void events.push(`${m} ${String(f?.['interface'])}#${String(f?.['ifindex'])}`),
    warn: (m, f) => void events.push(`warn ${m} ${String(f?.['interface'])}`), error: () => undefined, child: () => log,
  };
  const watcher = createVethWatcher({
    list: () => Promise.resolve([...links.keys()]),
    ifindex: (n) => links.get(n)?.ifindex ?? 0,
    driver: (n) => (driverCalls.push(n), links.get(n)?.driver),
    attach: (l: Link) => {
      if (failAttach.has(l.name)) throw new Error('ENODEV');
      return { mode: 'tcx', [Symbol.dispose]: () => void events.push(`disposed ${l.name}#${l.ifindex}`) };
    },
    exclude: new Set(['eth0']),
    log,
  });
  return { links, events, driverCalls, failAttach, watcher };
}

test('attaches veths as they appear, detaches them as they go, asks the driver once per interface', async () => {
  const t = setup();
  t.links.set('lo', { ifindex: 1, driver: '' });
  t.links.set('eth0', { ifindex: 2, driver: 'veth' });
  t.links.set('lxc1', { ifindex: 5, driver: 'veth' });
  t.links.set('docker0', { ifindex: 3, driver: 'bridge' });
  await t.watcher.poll();
  await t.watcher.poll();
  assert.deepEqual(t.events, ['endpoint attached lxc1#5']);
  assert.deepEqual(t.driverCalls.sort(), ['docker0', 'lo', 'lxc1'], 'eth0 is a host interface; nobody asked twice');
  t.links.delete('lxc1');
  await t.watcher.poll();
  assert.deepEqual(t.events.slice(1), ['disposed lxc1#5', 'endpoint detached lxc1#5']);
  assert.deepEqual(t.watcher.attached(), []);
});

test('a veth re-created under the same name (new ifindex) is attached afresh', async () => {
  const t = setup();
  t.links.set('lxc1', { ifindex: 5, driver: 'veth' });
  await t.watcher.poll();
  t.links.set('lxc1', { ifindex: 9, driver: 'veth' });
  await t.watcher.poll();
  assert.deepEqual(t.events, ['endpoint attached lxc1#5', 'disposed lxc1#5', 'endpoint detached lxc1#5', 'endpoint attached lxc1#9']);
});

test('a failed attach is logged once and retried; stopping detaches everything', async () => {
  const t = setup();
  t.links.set('lxc1', { ifindex: 5, driver: 'veth' });
  t.links.set('lxc2', { ifindex: 6, driver: 'veth' });
  t.failAttach.add('lxc2');
  await t.watcher.poll();
  await t.watcher.poll();
  assert.equal(t.events.filter((e) => e.startsWith('warn')).length, 1);
  t.failAttach.clear();
  await t.watcher.poll();
  assert.deepEqual(t.watcher.attached().map((l) => l.name).sort(), ['lxc1', 'lxc2']);
  t.watcher[Symbol.dispose]();
  assert.deepEqual(t.watcher.attached(), []);
  assert.equal(t.events.filter((e) => e.startsWith('endpoint detached')).length, 2);
});
