/**
 * The node's flow pipeline (src/pipeline) watches each kind once, however many parts read it (the IP
 * cache, the pod-level spec, Hubble's peers), and counts every watch in k8s_watch_events_total.
 * Counted by the real API server: its apiserver_longrunning_requests{verb="WATCH"} gauge, per
 * resource, before and while the pipeline runs (the harness's own components watch too, so the
 * test reads the difference). Remote context with Hubble once watched Nodes twice. With flow logs the
 * ContainerNetworkLog selection (src/export/cnl.ts) reads through the same factory: one more watch.
 * Built as src/cli/agent.ts builds it: the watches first, then the parts that read them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { after, before, describe, it } from 'node:test';
import { createContainerNetworkLogSelection } from '../../src/export/index.js';
import type { RestClient } from '../../src/k8s/index.js';
import { installCrds } from '../../src/operator/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { startNodePipeline, startNodeWatches, type NodePipeline, type NodeWatches } from '../../src/pipeline/index.js';
import { testAgentConfig } from '../ebpf/fake-context.js';
import { ROOT, eventually, readToken, startCluster, type Cluster } from './harness.js';
import { CRD_DIR, testLog } from './operator-helpers.js';

/** The API server's open WATCH requests per `group/resource` (core group: `resource`). */
async function watches(client: RestClient): Promise<Map<string, number>> {
  const url = new URL('/metrics', client.config.server);
  const body = await new Promise<string>((resolve, reject) => {
    const req = request(url, { ca: readFileSync(`${ROOT}.cache/k8s/run/pki/ca.crt`), headers: { authorization: `Bearer ${readToken()}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => (res.statusCode === 200 ? resolve(text) : reject(new Error(`GET /metrics: ${res.statusCode} ${text.slice(0, 200)}`))));
    });
    req.on('error', reject);
    req.end();
  });
  const out = new Map<string, number>();
  for (const line of body.split('\n')) {
    if (!line.startsWith('apiserver_longrunning_requests{') || !line.includes('verb="WATCH"')) continue;
    const labels = Object.fromEntries([...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (labels['subresource']) continue;
    const key = labels['group'] ? `${labels['group']}/${labels['resource']}` : (labels['resource'] as string);
    out.set(key, (out.get(key) ?? 0) + Number(line.split(' ').pop()));
  }
  return out;
}

const KINDS = ['nodes', 'pods', 'services', 'namespaces', 'retina.sh/retinaendpoints', 'retina.sh/metricsconfigurations', 'acn.azure.com/containernetworklogs'];

/** Open watches per kind now minus `base`. */
const delta = (now: Map<string, number>, base: Map<string, number>): Record<string, number> =>
  Object.fromEntries(KINDS.map((k) => [k, (now.get(k) ?? 0) - (base.get(k) ?? 0)]));

/** k8s_watch_events_total's resources with at least one event counted. */
function counted(text: string): Set<string> {
  const out = new Set<string>();
  for (const line of text.split('\n')) {
    const m = /^controlplane_networkobservability_k8s_watch_events_total\{[^}]*resource="([^"]+)"[^}]*\} (\S+)$/.exec(line);
    if (m && Number(m[2]) > 0) out.add(m[1] as string);
  }
  return out;
}

describe('the node pipeline opens one watch per kind on a real API server, each counted', { timeout: 180_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;

  before(async () => {
    cluster = await startCluster();
    client = cluster.client;
    await installCrds({ client, dir: CRD_DIR, log: testLog('crd'), only: ['ContainerNetworkLog'] });
  });

  after(async () => {
    await cluster?.[Symbol.asyncDispose]();
  });

  const run = async (over: Parameters<typeof testAgentConfig>[0], nodeName: string | undefined, want: Record<string, number>, wantCounted: string[], flowLogs = false): Promise<void> => {
    const base = await watches(client);
    const metrics = createMetricsRegistry({ processMetrics: false });
    const ring = { consume: () => undefined };
    const agent = testAgentConfig(over);
    let node: NodeWatches | undefined;
    let pipeline: NodePipeline | undefined;
    // Flow logs (src/export/setup.ts with flowLogs.enabled): the ContainerNetworkLog selection reads through the node's factory.
    const selection = flowLogs ? createContainerNetworkLogSelection({ log: testLog('cnl') }) : undefined;
    try {
      node = await startNodeWatches({ client, nodeName, agent, metrics, log: testLog('watches') });
      // Hubble's peers: the Nodes, asked for when the Hubble service is built (before the pipeline).
      const nodes = node.nodes();
      if (selection) {
        selection.watch(node.factory);
        selection.watch(node.factory);
      }
      pipeline = await startNodePipeline({ agent, metrics, log: testLog('pipeline'), watches: node, consumers: [{ name: 'hubble', consumer: ring }] });
      await nodes.waitForSync();
      assert.ok(pipeline.flows, 'flows are wanted (pod level and Hubble), so plugins get a sink');
      const got = await eventually('the pipeline\'s watches open', 60_000, async () => {
        const d = delta(await watches(client), base);
        return KINDS.every((k) => d[k] === want[k]) ? d : undefined;
      }).catch(async () => delta(await watches(client), base));
      assert.deepEqual(got, want);
      // Every watch counted: each kind the API server sees watched has events in the agent's counter.
      const seen = await eventually('every watch counted', 30_000, async () => {
        const c = counted((await metrics.expose()).body);
        return wantCounted.every((r) => c.has(r)) ? c : undefined;
      }).catch(async () => counted((await metrics.expose()).body));
      assert.deepEqual([...seen].sort(), [...wantCounted].sort());
    } finally {
      selection?.[Symbol.dispose]();
      await pipeline?.[Symbol.asyncDispose]();
      await node?.[Symbol.asyncDispose]();
    }
    // Stopping closes them all.
    await eventually('the pipeline\'s watches closed', 60_000, async () => {
      const d = delta(await watches(client), base);
      return KINDS.every((k) => d[k] === 0) ? true : undefined;
    });
  };

  it('remote context, pod level (MetricsConfiguration) and Hubble: RetinaEndpoints, Services, Nodes and MetricsConfigurations once each', async () => {
    await run(
      { remoteContext: true, enablePodLevel: true, enableAnnotations: false, hubble: { ...testAgentConfig().hubble, enabled: true } },
      undefined,
      { nodes: 1, pods: 0, services: 1, namespaces: 0, 'retina.sh/retinaendpoints': 1, 'retina.sh/metricsconfigurations': 1, 'acn.azure.com/containernetworklogs': 0 },
      ['nodes', 'services', 'retinaendpoints.retina.sh', 'metricsconfigurations.retina.sh'],
    );
  });

  it('flow logs: the ContainerNetworkLog selection adds one watch, through the same factory, counted like the others', async () => {
    await run(
      { remoteContext: true, enablePodLevel: true, enableAnnotations: false, hubble: { ...testAgentConfig().hubble, enabled: true } },
      undefined,
      { nodes: 1, pods: 0, services: 1, namespaces: 0, 'retina.sh/retinaendpoints': 1, 'retina.sh/metricsconfigurations': 1, 'acn.azure.com/containernetworklogs': 1 },
      ['nodes', 'services', 'retinaendpoints.retina.sh', 'metricsconfigurations.retina.sh', 'containernetworklogs.acn.azure.com'],
      true,
    );
  });

  it('local context, annotations and Hubble: this node\'s Pods, Namespaces and Nodes once each', async () => {
    await run(
      { remoteContext: false, enablePodLevel: true, enableAnnotations: true, hubble: { ...testAgentConfig().hubble, enabled: true } },
      'one-watch-node',
      { nodes: 1, pods: 1, services: 0, namespaces: 1, 'retina.sh/retinaendpoints': 0, 'retina.sh/metricsconfigurations': 0, 'acn.azure.com/containernetworklogs': 0 },
      ['nodes', 'pods', 'namespaces'],
    );
  });
});
