/**
 * Real-node case, Hubble Relay as the chart's Deployment (its image imported): `hubble observe`
 * through its Service returns the test pods' flows (see test/node/real-node.test.ts for why the areas
 * share one node).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { it } from 'node:test';
import { objectPath, resources, type KubeObject } from '../../../src/k8s/index.js';
import { CHART, ROOT } from '../../chart/helm.js';
import { TCP_SEND, UDP_SEND } from '../../ebpf/traffic.js';
import { eventually, listAll } from '../../integration/harness.js';
import { NODE_NAME, importImage } from '../node.js';
import { RELEASE, RELEASE_NS, daemonSetsRes, deploymentsRes } from '../workloads.js';
import { diagnosis, helmOf, run, type RealNodeSuite } from './suite.js';
import { withDrops } from '../../ebpf/drop-lock.js';

/** Hubble Relay through the chart. */
export function hubbleCases(s: RealNodeSuite): void {
  const helm = helmOf(s);
  it('Hubble Relay as the chart\'s Deployment (hubble.relay, its image imported): hubble observe through its Service returns the test pods\' flows', async (t) => {
    const { client, pods } = s;
    const { cli, srv } = pods;
    const tools = (await run('bash', [`${ROOT}hack/hubble/build.sh`], { env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } })).stdout.trim();
    const archive = (await run('bash', [`${ROOT}hack/node/build.sh`, 'relay-image'], { env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } })).stdout.trim();
    const relayRef = (await importImage(archive)).split('\n').find((r) => r.startsWith('docker.io/retina-ts-node/hubble-relay:'));
    assert.ok(relayRef, `the relay image in containerd after importing ${archive}`);
    const t0 = Date.now();
    const up = await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '--reuse-values', '--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true', '--set', `hubble.relay.image=${relayRef}`]);
    assert.equal(up.code, 0, `helm upgrade: ${up.stderr}`);
    await eventually('the relay Deployment and the rolled agent Ready', 300_000, async () => {
      const [ds] = await listAll<KubeObject & { metadata: { generation?: number }; status: { numberReady?: number; updatedNumberScheduled?: number; observedGeneration?: number } }>(client, daemonSetsRes, RELEASE_NS);
      const relay = (await listAll<KubeObject & { status: { readyReplicas?: number } }>(client, deploymentsRes, RELEASE_NS, { labelSelector: 'app.kubernetes.io/component=hubble-relay' }))[0];
      return ds && ds.status.observedGeneration === ds.metadata.generation && ds.status.updatedNumberScheduled === 1 && ds.status.numberReady === 1 && relay?.status.readyReplicas === 1;
    }, 500).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
    t.diagnostic(`helm upgrade with hubble.relay -> relay and agent Ready: ${Date.now() - t0} ms`);
    const relayIp = (await client.request<{ spec: { clusterIP: string } }>('GET', objectPath(resources.services, RELEASE_NS, `${RELEASE}-hubble-relay`))).spec.clusterIP;
    const server = `${relayIp}:80`;
    const hubble = async (args: string[]): Promise<string> => (await run(join(tools, 'hubble'), [...args, '--server', server], { env: { ...process.env, HUBBLE_CONFIG: '/dev/null' }, timeout: 30_000, maxBuffer: 64 << 20 })).stdout;
    // the relay found the agent through the peer Service (a name CoreDNS answers) and the node's address
    await eventually('hubble list nodes through the relay names the node', 60_000, async () => (await hubble(['list', 'nodes']).catch(() => '')).includes(NODE_NAME), 1000);
    // dropped datagrams: under the machine's drop lock (test/ebpf/drop-lock.ts)
    await withDrops(() => cli.ns.node(UDP_SEND, ['7', srv.ip, '9999', '32']));
    await cli.ns.node(TCP_SEND, ['1000', srv.ip, '8080']);
    type Flow = { verdict?: string; source?: { namespace?: string; pod_name?: string }; destination?: { namespace?: string; pod_name?: string }; l4?: { UDP?: { destination_port?: number }; TCP?: { destination_port?: number } } };
    const flows = async (): Promise<Flow[]> => (await hubble(['observe', '-o', 'json', '--last', '5000', '--from-pod', `${cli.namespace}/${cli.name}`, '--to-pod', `${srv.namespace}/${srv.name}`]))
      .split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as { flow?: Flow }).filter((m) => m.flow).map((m) => m.flow as Flow);
    const got = await eventually('the pods\' flows through the relay', 30_000, async () => {
      const fs = await flows();
      const drops = fs.filter((f) => f.verdict === 'DROPPED' && f.l4?.UDP?.destination_port === 9999);
      const tcp = fs.filter((f) => f.verdict === 'FORWARDED' && f.l4?.TCP?.destination_port === 8080);
      return drops.length >= 7 && tcp.length > 0 && { fs, drops, tcp };
    }, 1000);
    assert.ok(got.fs.every((f) => f.source?.pod_name === cli.name && f.source.namespace === cli.namespace && f.destination?.pod_name === srv.name && f.destination.namespace === srv.namespace), 'every flow names both pods');
    t.diagnostic(`through the relay at ${server}: ${got.fs.length} flows cli -> srv, ${got.drops.length} dropped to 9999, ${got.tcp.length} TCP to 8080`);
  });
}
