import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Logger } from '../../../log/index.js';
import { createLinkWatcher, type Link } from './links.js';

function setup(): {
  links: Map<string, { ifindex: number; kind: string }>;
  events: string[];
  failAttach: Set<string>;
  watcher: ReturnType<typeof createLinkWatcher>;
} {
  const links = new Map<string, { ifindex: number; kind: string }>();
  const events: string[] = [];
  const failAttach = new Set<string>();
  const log: Logger = {
    debug: () => undefined, info: (m, f) => void events.push(`${m} ${String(f?.['interface'])}#${String(f?.['ifindex'])}`),
    warn: (m, f) => void events.push(`warn ${m} ${String(f?.['interface'])}`), error: () => undefined, child: () => log,
  };
  const exclude = new Set(['eth0']);
  const watcher = createLinkWatcher({
    links: () => [...links].map(([name, l]) => ({ name, ...l })),
    choose: (all) => all.filter((l) => l.kind === 'veth' && !exclude.has(l.name)), // packetparser's choice
    attach: (l: Link) => {
      if (failAttach.has(l.name)) throw new Error('ENODEV');
      return { mode: 'tcx', [Symbol.dispose]: () => void events.push(`disposed ${l.name}#${l.ifindex}`) };
    },
    noun: 'endpoint',
    log,
  });
  return { links, events, failAttach, watcher };
}

test('attaches veths as they appear (by kind, host interfaces excluded), detaches them as they go', () => {
  const t = setup();
  t.links.set('lo', { ifindex: 1, kind: '' });
  t.links.set('eth0', { ifindex: 2, kind: 'veth' });
  t.links.set('lxc1', { ifindex: 5, kind: 'veth' });
  t.links.set('docker0', { ifindex: 3, kind: 'bridge' });
  t.watcher.poll();
  t.watcher.poll();
  assert.deepEqual(t.events, ['endpoint attached lxc1#5'], 'eth0 is a host interface (a veth, excluded); docker0 a bridge');
  t.links.delete('lxc1');
  t.watcher.poll();
  assert.deepEqual(t.events.slice(1), ['disposed lxc1#5', 'endpoint detached lxc1#5']);
  assert.deepEqual(t.watcher.attached(), []);
});

test('a veth re-created under the same name (new ifindex) is attached afresh', () => {
  const t = setup();
  t.links.set('lxc1', { ifindex: 5, kind: 'veth' });
  t.watcher.poll();
  t.links.set('lxc1', { ifindex: 9, kind: 'veth' });
  t.watcher.poll();
  assert.deepEqual(t.events, ['endpoint attached lxc1#5', 'disposed lxc1#5', 'endpoint detached lxc1#5', 'endpoint attached lxc1#9']);
});

test('a failed attach is logged once and retried; stopping detaches everything', () => {
  const t = setup();
  t.links.set('lxc1', { ifindex: 5, kind: 'veth' });
  t.links.set('lxc2', { ifindex: 6, kind: 'veth' });
  t.failAttach.add('lxc2');
  t.watcher.poll();
  t.watcher.poll();
  assert.equal(t.events.filter((e) => e.startsWith('warn')).length, 1);
  t.failAttach.clear();
  t.watcher.poll();
  assert.deepEqual(t.watcher.attached().map((l) => l.name).sort(), ['lxc1', 'lxc2']);
  t.watcher[Symbol.dispose]();
  assert.deepEqual(t.watcher.attached(), []);
  assert.equal(t.events.filter((e) => e.startsWith('endpoint detached')).length, 2);
});

test('a link the choice no longer takes (dns: a veth its CNI made a bridge port) is detached, and taken again when chosen again', () => {
  const links = new Map<string, { ifindex: number; kind: string; master?: number }>();
  const events: string[] = [];
  const log: Logger = {
    debug: () => undefined, info: (m, f) => void events.push(`${m} ${String(f?.['interface'])} ${String(f?.['why'] ?? '')}`.trim()),
    warn: () => undefined, error: () => undefined, child: () => log,
  };
  const watcher = createLinkWatcher({
    links: () => [...links].map(([name, l]) => ({ name, ...l })),
    choose: (all) => all.filter((l) => !all.some((b) => b.kind === 'bridge' && b.ifindex === l.master)),
    attach: (l: Link) => ({ mode: 'tcx', [Symbol.dispose]: () => void events.push(`disposed ${l.name}`) }),
    noun: 'interface',
    log,
  });
  links.set('br0', { ifindex: 3, kind: 'bridge' });
  links.set('veth1', { ifindex: 5, kind: 'veth' });
  watcher.poll();
  assert.deepEqual(watcher.attached().map((l) => l.name).sort(), ['br0', 'veth1']);
  links.set('veth1', { ifindex: 5, kind: 'veth', master: 3 });
  watcher.poll();
  assert.deepEqual(watcher.attached().map((l) => l.name), ['br0']);
  links.set('veth1', { ifindex: 5, kind: 'veth' });
  watcher.poll();
  links.delete('veth1');
  watcher.poll();
  assert.deepEqual(events.filter((e) => e.includes('veth1')), [
    'interface attached veth1', 'disposed veth1', 'interface detached veth1 no longer chosen', 'interface attached veth1', 'disposed veth1', 'interface detached veth1 gone',
  ]);
});

