import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeInformer } from '../../../test/fakes/informer.js';
import { nodePeers, selfPeer, type PeerNode } from './peers.js';

test('peers from the Nodes informer: first address (InternalIP first), the port once known; a Node without an address is no peer', () => {
  const nodes = new FakeInformer<PeerNode>();
  let port = 0;
  const peers = nodePeers(nodes, () => port);
  nodes.set('a', { name: 'a', ips: ['10.0.0.1', '203.0.113.1'] });
  nodes.set('b', { name: 'b', ips: [] });
  port = 4244;
  assert.deepEqual(peers.list(), [{ name: 'a', address: '10.0.0.1:4244' }]);
  const seen: string[] = [];
  using _sub = peers.subscribe((type, p) => seen.push(`${type} ${p.name} ${p.address}`));
  nodes.set('b', { name: 'b', ips: ['fd00::2'] });
  nodes.set('a', { name: 'a', ips: [] });
  nodes.set('c', { name: 'c', ips: ['10.0.0.3'] });
  nodes.del('c');
  assert.deepEqual(seen, [
    'PEER_ADDED a 10.0.0.1:4244', // replayed on subscribe
    'PEER_ADDED b [fd00::2]:4244',
    'PEER_DELETED a 10.0.0.1:4244',
    'PEER_ADDED c 10.0.0.3:4244',
    'PEER_DELETED c 10.0.0.3:4244',
  ]);
});

test('without Kubernetes, this node alone at the configured host', () => {
  assert.deepEqual(selfPeer('n1', '192.0.2.7', () => 4245).list(), [{ name: 'n1', address: '192.0.2.7:4245' }]);
});
