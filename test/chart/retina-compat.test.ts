/**
 * Retina's selectors and scrape jobs work unchanged on our rendered pods, and the coexist profile
 * stays out of a running Retina's way. The scrape jobs are Retina's own (test/fixtures/retina/prometheus,
 * SOURCES.md) and ours, run by a real Prometheus (Debian's) whose Kubernetes discovery is replaced by
 * static targets carrying the meta labels Kubernetes discovery gives our rendered pods and Service
 * (one target per container port, as role pod/service do); Prometheus' /api/v1/targets then says which
 * were kept and with which labels. Prometheus only listens on loopback; the targets' addresses are
 * loopback ports nothing listens on.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import { retinaKeysYaml, schemaText, type SchemaNode } from '../../src/chart/index.js';
import { chartSchema } from '../../src/cli/chart-specs.js';
import { CHART, ROOT, find, one, parseObjects, render, tool, type K8sObject } from './helm.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const FIX = join(ROOT, 'test/fixtures/retina');
const PROM_PORT = 19193;

/** Prometheus' label name for a Kubernetes label or annotation key. */
const sanitize = (k: string): string => k.replace(/[^a-zA-Z0-9_]/g, '_');

interface Pod { name: string; workload: string; template: Obj }

/** A pod of each DaemonSet/Deployment, on node `node`, with the IP 127.0.0.1 (host network). */
function podsOf(objects: readonly K8sObject[], node: string): Pod[] {
  return objects.filter((o) => o.kind === 'DaemonSet' || o.kind === 'Deployment')
    .map((o) => ({ name: `${o.metadata.name}-${node}`, workload: o.metadata.name, template: (o as Obj)['spec']['template'] as Obj }));
}

/** Targets of role pod: one per container port (a container without ports: one without a port). */
function podTargets(pods: readonly Pod[], namespace: string, node: string): { targets: string[]; labels: Record<string, string> }[] {
  const out: { targets: string[]; labels: Record<string, string> }[] = [];
  let fake = 1;
  for (const p of pods) {
    const meta: Record<string, string> = {
      __meta_kubernetes_namespace: namespace, __meta_kubernetes_pod_name: p.name, __meta_kubernetes_pod_ip: '127.0.0.1',
      __meta_kubernetes_pod_node_name: node, __meta_kubernetes_pod_host_ip: '127.0.0.1',
    };
    for (const [k, v] of Object.entries((p.template['metadata']['labels'] ?? {}) as Record<string, string>)) meta[`__meta_kubernetes_pod_label_${sanitize(k)}`] = v;
    for (const [k, v] of Object.entries((p.template['metadata']['annotations'] ?? {}) as Record<string, string>)) meta[`__meta_kubernetes_pod_annotation_${sanitize(k)}`] = v;
    for (const c of p.template['spec']['containers'] as Obj[]) {
      const ports = (c['ports'] ?? []) as Obj[];
      for (const port of ports.length ? ports : [undefined]) {
        const labels: Record<string, string> = { ...meta, __meta_kubernetes_pod_container_name: c['name'] as string, probe_id: `${p.workload}/${c['name']}/${port?.['name'] ?? '-'}` };
        if (port) Object.assign(labels, { __meta_kubernetes_pod_container_port_name: port['name'] ?? '', __meta_kubernetes_pod_container_port_number: String(port['containerPort']) });
        // The address discovery gives (pod IP:port); a distinct unused loopback port keeps targets apart.
        out.push({ targets: [`127.0.0.1:${port ? port['containerPort'] : 60000 + fake++}`], labels });
      }
    }
  }
  return out;
}

/** Targets of role service: one per Service port. */
function serviceTargets(objects: readonly K8sObject[]): { targets: string[]; labels: Record<string, string> }[] {
  return find(objects, 'Service').flatMap((s) => ((s as Obj)['spec']['ports'] as Obj[]).map((p) => ({
    targets: [`127.0.0.1:${p['port']}`],
    labels: { __meta_kubernetes_namespace: s.metadata.namespace ?? '', __meta_kubernetes_service_name: s.metadata.name, __meta_kubernetes_service_port_name: p['name'] ?? '',
      __meta_kubernetes_service_port_number: String(p['port']), probe_id: `svc/${s.metadata.name}/${p['name']}` },
  })));
}

/** Retina's jobs: kube-prometheus-stack's additionalScrapeConfigs, its own Prometheus config, Azure Monitor's. */
function retinaJobs(): Record<string, Obj> {
  const kps = parse(readFileSync(join(FIX, 'prometheus/kube-prometheus-stack-values.yaml'), 'utf8')) as Obj;
  const kpsJob = (parse(kps['prometheus']['prometheusSpec']['additionalScrapeConfigs'] as string) as Obj[])[0] as Obj;
  const own = (parse(readFileSync(join(FIX, 'prometheus/retina-prometheus-config.yaml'), 'utf8')) as Obj)['scrape_configs'][0] as Obj;
  const ama = ((parse(readFileSync(join(FIX, 'prometheus/network-observability-prometheus-config.yaml'), 'utf8')) as Obj)['scrape_configs'] as Obj[])
    .find((j) => j['job_name'] === 'network-observability-retina') as Obj;
  const ours = (parse(readFileSync(join(CHART, 'scrape/prometheus-job.yaml'), 'utf8')) as Obj[])[0] as Obj;
  return { 'kube-prometheus-stack': kpsJob, 'retina-prometheus': own, 'azure-monitor': ama, ours };
}

let prom: ChildProcess | undefined;
let dir: string | undefined;

interface Seen { kept: Map<string, Record<string, string>>; dropped: Set<string> }

/** Runs every job over the targets of `objects` (one Prometheus per call); returns what each job keeps. */
async function scrape(objects: readonly K8sObject[], namespace: string): Promise<Record<string, Seen>> {
  const jobs = retinaJobs();
  const pods = podTargets(podsOf(objects, 'node-a'), namespace, 'node-a');
  const svcs = serviceTargets(objects);
  const configs = Object.entries(jobs).map(([name, j]) => {
    const { kubernetes_sd_configs: sd, ...rest } = j;
    const role = (sd as Obj[])[0]?.['role'] as string;
    // Azure Monitor's job relies on its collector's $NODE_IP / $NODE_NAME substitution: only its keep stage matters here.
    const relabel = name === 'azure-monitor' ? (rest['relabel_configs'] as Obj[]).slice(0, 1) : rest['relabel_configs'];
    return { ...rest, relabel_configs: relabel, job_name: name, scrape_interval: '1h', scrape_timeout: '10s', static_configs: role === 'service' ? svcs : pods };
  });
  dir = mkdtempSync(join(tmpdir(), 'rt-compat-'));
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify({ scrape_configs: configs }));
  execFileSync('promtool', ['check', 'config', join(dir, 'prometheus.yml')], { stdio: 'pipe' });
  prom = spawn('prometheus', [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${PROM_PORT}`, '--log.level=warn'], { stdio: 'ignore' });
  try {
    for (let i = 0; ; i++) {
      const r = await fetch(`http://127.0.0.1:${PROM_PORT}/api/v1/targets?state=any`).then((x) => (x.ok ? x.json() as Promise<Obj> : undefined), () => undefined);
      const active = (r?.['data']?.['activeTargets'] ?? []) as Obj[];
      const dropped = (r?.['data']?.['droppedTargets'] ?? []) as Obj[];
      if (active.length + dropped.length === configs.reduce((n, c) => n + (c.static_configs as unknown[]).length, 0)) {
        const out: Record<string, Seen> = {};
        for (const name of Object.keys(jobs)) out[name] = { kept: new Map(), dropped: new Set() };
        for (const t of active) (out[t['scrapePool'] as string] as Seen).kept.set((t['labels'] as Record<string, string>)['probe_id'] as string, { ...t['labels'] as Record<string, string>, scrapeUrl: t['scrapeUrl'] as string });
        for (const t of dropped) (out[(t['discoveredLabels'] as Record<string, string>)['job'] as string] as Seen).dropped.add((t['discoveredLabels'] as Record<string, string>)['probe_id'] as string);
        return out;
      }
      if (i > 100) throw new Error(`Prometheus did not report every target: ${JSON.stringify(r).slice(0, 500)}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  } finally {
    prom.kill('SIGTERM');
    await new Promise((res) => prom?.once('exit', res));
    rmSync(dir, { recursive: true, force: true });
  }
}

/** workload/container of each kept target (targets whose labels end up equal are one target in Prometheus). */
const keptIds = (s: Seen): string[] => [...new Set([...s.kept.keys()].map((k) => k.split('/').slice(0, 2).join('/')))].sort();

before(() => {
  execFileSync('prometheus', ['--version'], { stdio: 'ignore' });
});

after(() => {
  prom?.kill('SIGKILL');
});

describe('Retina\'s selectors and scrape jobs on our pods', { timeout: 600_000 }, () => {
  it('agents carry k8s-app=retina and Retina\'s container names (retina, retinawin)', async () => {
    const { objects } = await render('windows');
    for (const [ds, c] of [['retina-agent-linux', 'retina'], ['retina-agent-windows', 'retinawin']] as const) {
      const t = (one(objects, 'DaemonSet', ds) as Obj)['spec']['template'] as Obj;
      assert.equal(t['metadata']['labels']['k8s-app'], 'retina', ds);
      assert.deepEqual((t['spec']['containers'] as Obj[]).map((x) => x['name']), [c]);
    }
    const op = (one(objects, 'Deployment', 'retina-operator') as Obj)['spec']['template'] as Obj;
    assert.equal(op['metadata']['labels']['k8s-app'], undefined, 'k8s-app=retina selects agents only, as in Retina');
  });

  it('Retina\'s jobs keep our agents, addressed by their prometheus.io/port and named by node; ours keeps agents only', async () => {
    // Hubble off (the default): with hubble.enabled the agent container also declares its Hubble port,
    // which Retina's pod jobs (one target per container port) would scrape for /metrics too.
    const { objects } = await render('windows');
    const seen = await scrape(objects, 'kube-system');
    // kube-prometheus-stack's job keeps container "retina": the Linux agents (Retina's Windows container retinawin is not kept there either).
    assert.deepEqual(keptIds(seen['kube-prometheus-stack'] as Seen), ['retina-agent-linux/retina']);
    for (const l of (seen['kube-prometheus-stack'] as Seen).kept.values()) {
      assert.equal(l['instance'], 'node-a');
      assert.equal(l['scrapeUrl'], 'http://127.0.0.1:10093/metrics', 'pod IP : prometheus.io/port');
    }
    // Retina's own job keeps retina(.*): both agents (and, as in Retina, the operator container retina-operator).
    const own = keptIds(seen['retina-prometheus'] as Seen);
    for (const id of ['retina-agent-linux/retina', 'retina-agent-windows/retinawin']) assert.ok(own.includes(id), `${id} in ${own.join(', ')}`);
    // Azure Monitor's job keeps kube-system/network-observability port "retina".
    assert.deepEqual([...(seen['azure-monitor'] as Seen).kept.keys()], ['svc/network-observability/retina']);
    // Ours: one target per agent pod and port, never the operator or the relay.
    const ours = keptIds(seen['ours'] as Seen);
    assert.deepEqual(ours, ['retina-agent-linux/retina', 'retina-agent-windows/retinawin'], 'our job keeps only agents');
    assert.ok((seen['ours'] as Seen).dropped.has('retina-operator/retina-operator/metrics'), 'the operator is discovered and dropped');
  });

  it('the check can fail: without the agents\' Retina names, Retina\'s jobs keep nothing of ours', async () => {
    const { objects } = await render('windows', ['--set', 'agent.linux.containerName=agent', '--set', 'agent.windows.containerName=agentwin', '--set', 'service.serviceName=other']);
    const seen = await scrape(objects, 'kube-system');
    assert.deepEqual(keptIds(seen['kube-prometheus-stack'] as Seen), []);
    assert.deepEqual(keptIds(seen['azure-monitor'] as Seen), []);
  });

  it('monitors: the agent PodMonitor and ServiceMonitor select the agents, the operator one the operator; relabelings and metricRelabelings rendered', async () => {
    const relabel = { sourceLabels: ['__meta_kubernetes_pod_label_k8s_app'], targetLabel: 'app' };
    const metric = { sourceLabels: ['__name__'], action: 'keep', regex: 'networkobservability_.*' };
    const vals = join(mkdtempSync(join(tmpdir(), 'rt-mon-')), 'v.yaml');
    writeFileSync(vals, JSON.stringify({ monitoring: Object.fromEntries(['serviceMonitor', 'podMonitor', 'operatorPodMonitor'].map((m) => [m, { enabled: true, relabelings: [relabel], metricRelabelings: [metric] }])), agent: { windows: { enabled: true } } }));
    const { objects } = await render('basic', ['-f', vals, '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PodMonitor', '--set', 'monitoring.apiGroups={monitoring.coreos.com}']);
    const podLabels = (kind: string, name: string): Record<string, string> => ((one(objects, kind, name) as Obj)['spec']['template']['metadata']['labels']) as Record<string, string>;
    const selects = (m: K8sObject, labels: Record<string, string>): boolean => Object.entries((m as Obj)['spec']['selector']['matchLabels'] as Record<string, string>).every(([k, v]) => labels[k] === v);
    const agentPm = one(objects, 'PodMonitor', 'retina-agent');
    const opPm = one(objects, 'PodMonitor', 'retina-operator');
    const sm = one(objects, 'ServiceMonitor', 'retina-agent');
    const svc = one(objects, 'Service', 'network-observability') as Obj;
    for (const ds of ['retina-agent-linux', 'retina-agent-windows']) {
      assert.ok(selects(agentPm, podLabels('DaemonSet', ds)), `agent PodMonitor selects ${ds}`);
      assert.ok(!selects(opPm, podLabels('DaemonSet', ds)));
      assert.ok(Object.entries(svc['spec']['selector'] as Record<string, string>).every(([k, v]) => podLabels('DaemonSet', ds)[k] === v), `Service selects ${ds}`);
    }
    assert.ok(!selects(agentPm, podLabels('Deployment', 'retina-operator')), 'agent PodMonitor misses the operator');
    assert.ok(selects(opPm, podLabels('Deployment', 'retina-operator')));
    const ep = (m: K8sObject): Obj => ((m as Obj)['spec']['podMetricsEndpoints'] ?? (m as Obj)['spec']['endpoints'])[0] as Obj;
    assert.deepEqual(ep(agentPm)['relabelings'], [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: 'instance' }, relabel]);
    assert.deepEqual(ep(sm)['relabelings'], [{ sourceLabels: ['__meta_kubernetes_pod_node_name'], targetLabel: 'instance' }, relabel]);
    assert.deepEqual(ep(opPm)['relabelings'], [relabel]);
    for (const m of [agentPm, sm, opPm]) assert.deepEqual(ep(m)['metricRelabelings'], [metric], m.metadata.name);
    assert.equal(ep(sm)['port'], 'retina', 'the ServiceMonitor uses the Service port named service.name');
    assert.equal(ep(agentPm)['port'], 'retina');
  });
});

describe('coexist: beside a running Retina', { timeout: 600_000 }, () => {
  const retinaRender = async (): Promise<K8sObject[]> => {
    const r = await tool('helm', ['template', 'retina', join(FIX, 'standard-chart'), '-n', 'kube-system', '--set', 'operator.enabled=true',
      '--set', 'metrics.podMonitor.enabled=true', '--api-versions', 'monitoring.coreos.com/v1/PodMonitor']);
    assert.equal(r.code, 0, r.stderr);
    return parseObjects(r.stdout);
  };
  const CLUSTER_SCOPED = new Set(['ClusterRole', 'ClusterRoleBinding', 'CustomResourceDefinition', 'Namespace', 'PriorityClass']);
  const ident = (o: K8sObject): string => `${o.kind}/${CLUSTER_SCOPED.has(o.kind) ? '' : (o.metadata.namespace ?? 'kube-system')}/${o.metadata.name}`;
  /** Host ports the agents take: container ports (host network), and ports in their flags. */
  const hostPorts = (objs: readonly K8sObject[]): number[] => find(objs, 'DaemonSet').flatMap((d) => ((d as Obj)['spec']['template']['spec']['containers'] as Obj[]).flatMap((c) => [
    ...((c['ports'] ?? []) as Obj[]).map((p) => Number(p['containerPort'])),
    ...((c['args'] ?? []) as string[]).flatMap((a) => [...a.matchAll(/:(\d{2,5})\b/g)].map((m) => Number(m[1]))),
  ]));

  it('no object name, host port, label selector or scrape job of Retina\'s meets ours', async () => {
    const retina = await retinaRender();
    const ours = (await render('coexist', ['--set', 'agent.windows.enabled=true', '--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true',
      '--set', 'monitoring.podMonitor.enabled=true', '--set', 'monitoring.serviceMonitor.enabled=true', '--set', 'monitoring.operatorPodMonitor.enabled=true',
      '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PodMonitor', '--set', 'monitoring.apiGroups={monitoring.coreos.com}'])).objects;
    const theirs = new Set(retina.map(ident));
    assert.ok(theirs.size > 8, [...theirs].join(', '));
    // The CRDs are shared on purpose (same group and kinds): Helm's crds/ leaves existing ones alone.
    assert.deepEqual(ours.map(ident).filter((i) => theirs.has(i) && !i.startsWith('CustomResourceDefinition/')), [], 'objects with the same kind, namespace and name');
    const theirPorts = new Set([...hostPorts(retina), 9965, 4244, 4245]); // + Retina's Hubble chart: metrics, hubble, relay
    assert.ok(theirPorts.has(10093) && theirPorts.has(18080) && theirPorts.has(18081), [...theirPorts].join(','));
    assert.deepEqual(hostPorts(ours).filter((p) => theirPorts.has(p)), [], 'host ports');
    // Selectors: Retina's workloads, Service and monitors select none of our pods, and ours none of theirs.
    const podLabelSets = (objs: readonly K8sObject[]): Record<string, string>[] => podsOf(objs, 'n').map((p) => p.template['metadata']['labels'] as Record<string, string>);
    const selectorsOf = (objs: readonly K8sObject[]): Record<string, string>[] => objs.flatMap((o) => {
      const s = (o as Obj)['spec'];
      if (o.kind === 'Service') return s['selector'] ? [s['selector']] : [];
      if (s?.['selector']?.['matchLabels']) return [s['selector']['matchLabels']];
      return [];
    });
    const hits = (sels: Record<string, string>[], pods: Record<string, string>[]): number => sels.filter((sel) => pods.some((l) => Object.entries(sel).every(([k, v]) => l[k] === v))).length;
    assert.equal(hits(selectorsOf(retina), podLabelSets(ours)), 0, 'Retina\'s selectors pick our pods');
    assert.equal(hits(selectorsOf(ours), podLabelSets(retina)), 0, 'our selectors pick Retina\'s pods');
    assert.ok(hits(selectorsOf(retina), podLabelSets(retina)) > 0 && hits(selectorsOf(ours), podLabelSets(ours)) > 0, 'the selector check can match');
    for (const p of podLabelSets(ours)) assert.notEqual(p['k8s-app'], 'retina');
    // Retina's scrape jobs keep none of our targets, so no series is scraped twice under their job.
    const seen = await scrape(ours, 'kube-system');
    for (const j of ['kube-prometheus-stack', 'retina-prometheus', 'azure-monitor']) assert.deepEqual(keptIds(seen[j] as Seen), [], `${j}: ${JSON.stringify([...(seen[j] as Seen).kept.values()])}`);
    assert.ok(keptIds(seen['ours'] as Seen).length >= 2, 'our job still scrapes ours');
  });
});

describe('the chart\'s generated files are current (make chart-gen)', () => {
  it('values.schema.json (config sections from the key specs, Retina entries) and retina-keys.yaml match the sources', async () => {
    const text = readFileSync(join(CHART, 'values.schema.json'), 'utf8');
    const schema = await chartSchema(JSON.parse(text) as SchemaNode);
    assert.equal(text, schemaText(schema), 'values.schema.json is stale: run make chart-gen');
    assert.equal(readFileSync(join(CHART, 'retina-keys.yaml'), 'utf8'), retinaKeysYaml(schema), 'retina-keys.yaml is stale: run make chart-gen');
  });

  it('the check can fail: a key spec the schema does not follow is stale', async () => {
    const text = readFileSync(join(CHART, 'values.schema.json'), 'utf8');
    const edited = JSON.parse(text) as SchemaNode;
    const cfg = (edited.properties?.['config']?.properties ?? {}) as Record<string, SchemaNode>;
    delete cfg['enablePodLevel'];
    cfg['enablePodLevl'] = { type: 'boolean' };
    assert.notEqual(schemaText(edited), schemaText(await chartSchema(edited)));
    assert.equal(text, schemaText(await chartSchema(JSON.parse(text) as SchemaNode)), 'and the checked-in file regenerates to itself');
  });
});
