/**
 * Real-node cases, watching the agent: a new pod's first enriched series, a real Prometheus with the
 * chart's scrape job over the real Pods' discovery labels, and `retina-agent diagnose` through
 * pods/exec in the agent pod (see test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { parse } from 'yaml';
import { collectionPath, resources } from '../../../src/k8s/index.js';
import { CHART } from '../../chart/helm.js';
import { UDP_SEND } from '../../ebpf/traffic.js';
import { eventually, listAll } from '../../integration/harness.js';
import { PodNs } from '../../integration/pod-flows-net.js';
import { API_SERVICE_IP, NODE_IP, NODE_NAME } from '../node.js';
import { RELEASE_NS, SLEEPER, agentPods, deploymentsRes, netnsOf, podExec, readyPod, scriptDeployment, type Pod } from '../workloads.js';
import { withDrops } from '../../ebpf/drop-lock.js';
import { ADV, AGENT_PORT, PROM, find, type RealNodeSuite } from './suite.js';
import { startPrometheus } from '../prometheus.js';

/** A new pod's first series; Prometheus with the chart's job; diagnose. */
export function observeCases(s: RealNodeSuite): void {
  const { nsA } = s;
  it('a new pod: time from its creation to its first enriched series', async (t) => {
    const { client, imageRef, pods } = s;
    const t0 = Date.now();
    await client.request('POST', collectionPath(deploymentsRes, nsA), { body: scriptDeployment(nsA, 'late', imageRef, [{ name: 'main', script: SLEEPER }]) });
    const late = await readyPod(client, nsA, 'late');
    const running = Date.now() - t0;
    const ns = new PodNs(netnsOf(late.status.podIP), '', late.status.podIP, '');
    // Its datagrams are drops: under the machine's drop lock (test/ebpf/drop-lock.ts).
    const first = await withDrops(() => eventually('an adv_ series naming the new pod', 60_000, async () => {
      await ns.node(UDP_SEND, ['1', pods.srv.ip, '9999', '16']);
      return (await find(`${ADV}drop_count`, { source_podname: late.metadata.name, source_workload_name: 'late' })).length > 0 && Date.now();
    }, 200));
    t.diagnostic(`pod created -> Ready ${running} ms, -> first enriched series ${first - t0} ms`);
    console.log(JSON.stringify({ figure: 'real-node-pod-created-to-first-enriched-series', ms: first - t0, readyMs: running }));
  });

  // Debian's prometheus (2.42) is built without Kubernetes service discovery: the chart's job runs with
  // its kubernetes_sd_configs replaced by a file_sd file holding what role: pod discovery gives for the
  // cluster's real Pods (one target per container port, or one per pod without ports; the same
  // __meta_kubernetes_* labels), so the chart's relabeling meets the real API objects.
  it('a real Prometheus with the chart\'s scrape job over the real Pods\' discovery labels: exactly the agent, up == 1, pod series', async (t) => {
    const { client, pods } = s;
    const jobs = parse(readFileSync(join(CHART, 'scrape', 'prometheus-job.yaml'), 'utf8')) as Record<string, unknown>[];
    assert.equal(jobs.length, 1);
    const { kubernetes_sd_configs: sd, ...job } = jobs[0] as Record<string, unknown>;
    assert.deepEqual(sd, [{ role: 'pod' }]);
    const all = await listAll<Pod>(client, resources.pods);
    await using prom = await startPrometheus(PROM, (dir) => {
      writeFileSync(join(dir, 'pods.json'), JSON.stringify(podDiscovery(all)));
      return { global: { scrape_interval: '2s', evaluation_interval: '2s' }, scrape_configs: [{ ...job, scrape_interval: '2s', scrape_timeout: '2s', file_sd_configs: [{ files: [join(dir, 'pods.json')] }] }] };
    });
    const api = prom.api;
    const active = await prom.targets();
    const [agent] = await agentPods(client);
    assert.ok(agent);
    t.diagnostic(`targets: ${active.map((x) => `${x.scrapeUrl} ${x.health} ${JSON.stringify(x.labels)}`).join('; ')}`);
    assert.deepEqual(active.map((x) => [x.labels['job'], x.labels['instance'], x.labels['namespace'], x.labels['pod'], x.scrapeUrl, x.health]),
      [['network-observability', NODE_NAME, RELEASE_NS, agent.metadata.name, `http://${NODE_IP}:${AGENT_PORT}/metrics`, 'up']], 'exactly the agent, named by its node');
    await eventually('up == 1', 30_000, async () => ((await api('/api/v1/query', { query: 'up{job="network-observability"} == 1' })).data as { result: unknown[] }).result.length === 1, 1000);
    const adv = await eventually('pod-level series through Prometheus', 30_000, async () => {
      const r = (await api('/api/v1/query', { query: `sum by (source_podname) (networkobservability_adv_forward_count{source_namespace="${nsA}"})` })).data as { result: { metric: Record<string, string> }[] };
      return r.result.length > 0 && r.result;
    }, 1000);
    assert.ok(adv.some((x) => x.metric['source_podname'] === pods.cli.name), JSON.stringify(adv));
  });

  it('retina-agent diagnose through pods/exec (API server -> kubelet -> containerd\'s stream server) in the agent pod', async (t) => {
    const { node, client } = s;
    const [agent] = await agentPods(client);
    assert.ok(agent);
    // the chart's agent container: `retina`, as Retina names it (agent.linux.containerName)
    const { status, stdout: out, stderr: err } = await podExec(node.kubeconfig, RELEASE_NS, agent.metadata.name, agent.status?.containerStatuses?.[0]?.name ?? 'retina',
      ['/usr/local/bin/node', '/app/retina-agent.mjs', 'diagnose', '--config', '/retina/config/config.yaml']);
    assert.equal(status.status, 'Success', `diagnose exited: ${JSON.stringify(status)} ${err.slice(-1000)}`);
    type Section = { ok: boolean; error?: string; data?: Record<string, unknown> };
    const doc = JSON.parse(out) as { schema: string; sections: Record<string, Section> };
    assert.equal(doc.schema, 'retina-ts/diagnose/v1');
    const k8s = doc.sections['kubernetes'];
    assert.ok(k8s?.ok, `kubernetes section: ${k8s?.error}`);
    assert.equal(k8s.data?.['reachable'], true, `in-cluster config reaches the API server: ${JSON.stringify(k8s.data)}`);
    assert.equal(k8s.data?.['server'], `https://${API_SERVICE_IP}:443`, 'in-cluster: the kubernetes Service, through kube-proxy');
    const running = doc.sections['agent'];
    assert.ok(running?.ok, `agent section: ${running?.error}`);
    assert.equal(running.data?.['running'], true, `the running agent answered: ${JSON.stringify(running.data).slice(0, 500)}`);
    t.diagnostic(`sections: ${Object.entries(doc.sections).map(([k, v]) => `${k}=${v.ok ? 'ok' : v.error ?? 'failed'}`).join(', ')}`);
  });
}

/** Prometheus's role: pod discovery of `pods` as file_sd target groups (one per container port; one per pod without ports). */
function podDiscovery(pods: readonly Pod[]): unknown[] {
  const clean = (k: string): string => k.replace(/[^a-zA-Z0-9_]/g, '_');
  const out: unknown[] = [];
  for (const p of pods) {
    const ip = p.status?.podIP;
    if (!ip) continue;
    const base: Record<string, string> = {
      __meta_kubernetes_namespace: p.metadata.namespace ?? '', __meta_kubernetes_pod_name: p.metadata.name, __meta_kubernetes_pod_ip: ip,
      __meta_kubernetes_pod_node_name: p.spec.nodeName ?? '',
    };
    for (const [k, v] of Object.entries(p.metadata.labels ?? {})) base[`__meta_kubernetes_pod_label_${clean(k)}`] = v;
    for (const [k, v] of Object.entries(p.metadata.annotations ?? {})) base[`__meta_kubernetes_pod_annotation_${clean(k)}`] = v;
    const ports = p.spec.containers.flatMap((c) => (c.ports ?? []).map((port) => ({ c, port })));
    if (ports.length === 0) out.push({ targets: [ip], labels: base });
    for (const { c, port } of ports) {
      out.push({ targets: [`${ip}:${port.containerPort}`], labels: { ...base, __meta_kubernetes_pod_container_name: c.name, __meta_kubernetes_pod_container_port_name: port.name ?? '', __meta_kubernetes_pod_container_port_number: String(port.containerPort), __meta_kubernetes_pod_container_port_protocol: port.protocol ?? 'TCP' } });
    }
  }
  return out;
}
