/**
 * The real hubble-relay (v1.18.4) following three of our Hubble servers while they come and go. The
 * relay finds them as in a cluster: through our Peer service (`nodePeers` over the agent's Nodes
 * informer) fed by real Node objects in the test control plane, whose InternalIPs are the servers'
 * loopback addresses (127.53.0.x, one port for all, as agents share Hubble's port on their nodes).
 * - A server stopped as the agent stops it (SIGTERM) and started again on its address: the relay's
 *   follow that was open all along gets its new flows again (our server ends its streams with
 *   UNAVAILABLE; ended OK, the relay takes the peer's answer as complete and never asks it again).
 * - A Node deleted: the relay drops the peer (its ServerStatus counts it no more); created again: the
 *   relay counts it and a new follow gets its flows.
 * Needs the hubble tools (make test builds them); never skips.
 */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { createFlow } from '../../src/flow/index.js';
import { collectionPath, createInformerFactory, nodeTransform, objectPath, resources, type InformerFactory, type RestClient } from '../../src/k8s/index.js';
import { createLogger } from '../../src/log/index.js';
import * as hubble from '../../src/server/hubble/index.js';
import { eventually, startCluster, type Cluster } from './harness.js';
import { freePortOn, hubbleTools, startRelay, type RelayProcess } from './hubble-tools.js';
import { uniqueId } from './operator-helpers.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const protos = hubble.loadHubbleProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url)));
const log = createLogger({ level: 'error', component: 'test' });

describe('hubble-relay over our Peer service while peers come and go', { timeout: 180_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let factory: InformerFactory;
  let relay: RelayProcess | undefined;
  let peerService: hubble.HubbleServer | undefined;
  let port = 0;
  const id = uniqueId('rp');
  const label = { 'retina-ts-test': id };
  const peers = [0, 1, 2].map((i) => ({ name: `${id}-${i}`, ip: `127.53.0.${i + 1}` }));
  const servers = new Map<string, { server: hubble.HubbleServer; ring: hubble.FlowRing }>();
  const follows: grpc.ClientReadableStream<Obj>[] = [];
  let observer: Obj;
  let tick: NodeJS.Timeout | undefined;
  let seq = 0;

  const createNode = (p: { name: string; ip: string }): Promise<unknown> => client.request('POST', collectionPath(resources.nodes), {
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name: p.name, labels: label }, status: { addresses: [{ type: 'InternalIP', address: p.ip }] } },
  });
  const deleteNode = (name: string): Promise<unknown> => client.request('DELETE', objectPath(resources.nodes, undefined, name)).catch(() => undefined);
  const startPeer = async (p: { name: string; ip: string }): Promise<void> => {
    const ring = hubble.createFlowRing(256);
    const server = await hubble.startHubbleServer({
      protos, ring, listen: { host: p.ip, port }, nodeName: p.name, version: 'test', log,
      peers: { list: () => [{ name: p.name, address: `${p.ip}:${port}` }], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
    });
    servers.set(p.name, { server, ring });
  };
  const stopPeer = async (name: string): Promise<void> => {
    const s = servers.get(name);
    servers.delete(name);
    await s?.server[Symbol.asyncDispose]();
  };
  /**
   * A follow through the relay: the flows it got by node, each by its own time (ms; the relay's sort
   * buffer delivers flows seconds after they were written, so arrival says nothing of when).
   */
  const follow = (): Map<string, number[]> => {
    const byNode = new Map<string, number[]>();
    const call = observer['GetFlows']({ follow: true }) as grpc.ClientReadableStream<Obj>;
    call.on('data', (m: Obj) => {
      const t = m['flow']?.['time'] as { seconds: number | string; nanos: number } | undefined;
      if (t && m['node_name']) byNode.set(m['node_name'], [...(byNode.get(m['node_name']) ?? []), Number(t.seconds) * 1000 + t.nanos / 1e6]);
    });
    call.on('error', () => undefined);
    follows.push(call);
    return byNode;
  };
  const connected = (n: number) => async (): Promise<boolean> => (await (relay as RelayProcess).connected()) === n;

  before(async () => {
    hubbleTools(); // built, or fail now
    cluster = await startCluster();
    client = cluster.client;
    factory = createInformerFactory({ client, log });
    const nodes = factory.informer({ resource: resources.nodes, labelSelector: `retina-ts-test=${id}`, transform: nodeTransform });
    factory.start();
    await nodes.waitForSync();
    port = await freePortOn('0.0.0.0');
    peerService = await hubble.startHubbleServer({
      protos, ring: hubble.createFlowRing(16), listen: { host: '127.53.0.100', port }, nodeName: `${id}-svc`, version: 'test', log,
      peers: hubble.nodePeers(nodes, () => port),
    });
    for (const p of peers) {
      await createNode(p);
      await startPeer(p);
    }
    await eventually('the peer service lists the three Nodes', 20_000, () => nodes.size === 3);
    // One flow a peer every 100 ms, stamped now (the relay sorts by time).
    tick = setInterval(() => {
      for (const { ring } of servers.values()) {
        ring.consume({ source: 'test', flows: [createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'FORWARDED', proto: 6, srcPort: 1000 + (seq++ % 1000), dstPort: 80, tcpFlags: 16, timeMs: Date.now() })] });
      }
    }, 100);
    relay = await startRelay(`127.53.0.100:${port}`, { host: '127.53.0.101', log: 'buffer' });
    observer = new protos.ObserverClient(relay.addr, grpc.credentials.createInsecure()) as unknown as Obj;
    await eventually('the relay connected to the three peers', 30_000, connected(3), 500)
      .catch((e: Error) => { throw new Error(`${e.message}\nrelay log:\n${relay?.log().slice(-3000)}`); });
  });

  after(async () => {
    clearInterval(tick);
    for (const c of follows) c.cancel();
    observer?.['close']();
    relay?.stop();
    for (const name of [...servers.keys()]) await stopPeer(name);
    await peerService?.[Symbol.asyncDispose]();
    await factory?.[Symbol.asyncDispose]();
    if (client) for (const p of peers) await deleteNode(p.name);
    await cluster?.[Symbol.asyncDispose]();
  });

  it('a peer stopped as on SIGTERM and started again is followed again by the follow that stayed open', async () => {
    const got = follow();
    await eventually('flows from all three peers', 20_000, () => peers.every((p) => (got.get(p.name)?.length ?? 0) > 0), 200);
    const gone = peers[2] as { name: string; ip: string };
    await stopPeer(gone.name);
    await eventually('the relay counts the stopped peer gone', 20_000, connected(2), 250);
    const before = got.get(gone.name)?.length ?? 0;
    await startPeer(gone);
    const back = Date.now();
    await eventually('flows of the restarted peer in the open follow', 30_000, () => (got.get(gone.name) ?? []).some((t) => t >= back), 250)
      .catch((e: Error) => { throw new Error(`${e.message} (it had ${before} before the stop)\nrelay log:\n${relay?.log().slice(-3000)}`); });
    // The others were followed throughout.
    for (const p of peers.slice(0, 2)) assert.ok((got.get(p.name) ?? []).some((t) => t >= back), p.name);
  });

  it('a Node deleted is a peer the relay drops; created again, it is counted and followed', async () => {
    const node = peers[1] as { name: string; ip: string };
    await deleteNode(node.name);
    await eventually('the relay counts two peers', 20_000, connected(2), 250);
    await createNode(node);
    await eventually('the relay counts three peers again', 30_000, connected(3), 250);
    const got = follow();
    const t = Date.now();
    await eventually('flows of every peer in a new follow', 20_000, () => peers.every((p) => (got.get(p.name) ?? []).some((x) => x >= t)), 200);
  });
});
