import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LinkInfo } from '../../../ffi/linux/index.js';
import { LinkRoles, bridgePorts, isBridgeDuplicate } from './bridges.js';

const link = (ifindex: number, kind: string, master?: number): LinkInfo => ({ ifindex, name: `if${ifindex}`, kind, stats: undefined, ...(master ? { master } : {}) });

describe('dns bridges: one copy of a packet a bridge shows twice', () => {
  it('arrivals count on the port, not again on the bridge; packets leaving count on the bridge, not again on the port', () => {
    assert.equal(isBridgeDuplicate('port', false), false, 'a pod\'s query arriving on its veth');
    assert.equal(isBridgeDuplicate('bridge', false), true, 'the same query passed up by the bridge');
    assert.equal(isBridgeDuplicate('bridge', true), false, 'the host\'s answer leaving through the bridge');
    assert.equal(isBridgeDuplicate('port', true), true, 'the same answer leaving the veth');
    assert.equal(isBridgeDuplicate('other', false), false);
    assert.equal(isBridgeDuplicate('other', true), false);
  });

  it('roles from link dumps: a bridge, its ports (IFLA_MASTER), a bond\'s slave is no port; an unknown ifindex dumps again, at most once a second', () => {
    let t = 0;
    let dumps = 0;
    let links = [link(1, ''), link(2, ''), link(5, 'bridge'), link(6, 'veth', 5), link(7, 'bond'), link(8, '', 7)];
    const roles = new LinkRoles(() => (dumps++, links), () => t);
    assert.deepEqual([1, 2, 5, 6, 7, 8].map((i) => roles.role(i)), ['other', 'other', 'bridge', 'port', 'other', 'other']);
    assert.equal(dumps, 1);
    links = [...links, link(9, 'veth', 5)]; // a new pod's veth
    assert.equal(roles.role(9), 'other', 'within a second of the last dump: not dumped again');
    assert.equal(dumps, 1);
    t = 1000;
    assert.equal(roles.role(9), 'port');
    assert.equal(dumps, 2);
    assert.equal(roles.role(6), 'port', 'known: no dump');
    assert.equal(dumps, 2);
    links = links.filter((l) => l.ifindex !== 6);
    t = 31_000;
    assert.equal(roles.role(6), 'other', 'a table older than 30 s is dumped again');
    assert.equal(dumps, 3);
  });

  it('a dump learnt from the link watcher serves the roles: no dump of their own until it is a second old (a miss) or 30 s', () => {
    let t = 0;
    let dumps = 0;
    let links = [link(1, ''), link(5, 'bridge'), link(6, 'veth', 5)];
    const roles = new LinkRoles(() => (dumps++, links), () => t);
    roles.learn(links);
    assert.deepEqual([1, 5, 6].map((i) => roles.role(i)), ['other', 'bridge', 'port']);
    assert.equal(dumps, 0);
    t = 900;
    links = [...links, link(9, 'veth', 5)];
    roles.learn(links, new Set([6, 9]));
    t = 1500;
    assert.equal(roles.role(9), 'port', 'the learnt dump has it');
    assert.equal(roles.role(12), 'other', 'a miss within a second of the learnt dump');
    assert.equal(dumps, 0);
    t = 1900;
    assert.equal(roles.role(12), 'other');
    assert.equal(dumps, 1, 'a miss a second after it dumps');
  });

  it('bridge ports (where dns puts no egress program): a bridge\'s enslaved links, not a bond\'s slaves, not the bridge', () => {
    const links = [link(1, ''), link(2, ''), link(5, 'bridge'), link(6, 'veth', 5), link(7, 'bond'), link(8, '', 7), link(9, 'veth', 5), link(10, 'veth')];
    assert.deepEqual([...bridgePorts(links)].sort((a, b) => a - b), [6, 9]);
    assert.deepEqual([...bridgePorts([link(6, 'veth', 5)])], [], 'a master not in the dump is not known to be a bridge');
  });
});
