/**
 * The chart rendered offline: `helm lint --strict` and `helm template` for every profile, every object
 * validated by `kubeconform -strict` against schemas generated from Kubernetes' swagger.json and our
 * CRDs, and the properties the issue asks for (and Retina's chart gets wrong) checked on the objects.
 */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { CHART, PROFILES, ROOT, find, kubeconform, one, profileFile, render, tool, type K8sObject } from './helm.js';

const MONITORS = ['--set', 'monitoring.serviceMonitor.enabled=true', '--set', 'monitoring.podMonitor.enabled=true', '--set', 'monitoring.operatorPodMonitor.enabled=true',
  '--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PodMonitor',
  '--api-versions', 'azmonitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'azmonitoring.coreos.com/v1/PodMonitor'];

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const podSpec = (o: K8sObject): Obj => (o as Obj)['spec']['template']['spec'] as Obj;
const container = (o: K8sObject): Obj => podSpec(o)['containers'][0] as Obj;

describe('chart: lint, template and kubeconform for every profile', { timeout: 1_800_000 }, () => {
  it('has the five profiles of the issue and coexist (issue 26)', () => {
    assert.deepEqual(PROFILES, ['advanced-local', 'advanced-remote', 'basic', 'coexist', 'hardened', 'windows']);
  });

  for (const p of PROFILES) {
    it(`${p}: helm lint --strict passes`, async () => {
      const r = await tool('helm', ['lint', '--strict', CHART, '-f', profileFile(p)]);
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    });
    it(`${p}: every rendered object is valid for kubeconform -strict (monitors on, CRDs included)`, async () => {
      const { text, objects } = await render(p, [...MONITORS, '--include-crds']);
      assert.ok(objects.length >= 10, `only ${objects.length} objects`);
      // ServiceMonitor/PodMonitor: their CRDs are not ours and not in swagger.json; checked field by field below.
      const r = await kubeconform(text, ['ServiceMonitor', 'PodMonitor']);
      assert.equal(r.summary.invalid + r.summary.errors, 0, r.stdout);
      assert.equal(r.summary.valid, objects.length - find(objects, 'ServiceMonitor').length - find(objects, 'PodMonitor').length, r.stdout);
    });
  }

  it('kubeconform -strict refuses a misspelt field (the check can fail)', async () => {
    const { text } = await render('basic');
    const r = await kubeconform(text.replace('hostNetwork: true', 'hostNetwrk: true'));
    assert.equal(r.summary.invalid, 1, r.stdout);
    assert.match(r.stdout, /hostNetwrk/);
  });

  it('the CRD schemas refuse a misspelt field of our custom resources', async () => {
    const cr = 'apiVersion: retina.sh/v1alpha1\nkind: MetricsConfiguration\nmetadata: {name: x}\nspec:\n  contextOptionz: []\n';
    const r = await kubeconform(cr);
    assert.equal(r.summary.invalid, 1, r.stdout);
    assert.match(r.stdout, /contextOptionz/);
  });

  it('helm is v3.22.0 and renders for Kubernetes 1.35 without --kube-version (set at build)', async () => {
    const v = await tool('helm', ['version', '--template', '{{ .Version }}']);
    assert.equal(v.stdout.trim(), 'v3.22.0');
    const dir = mkdtempSync(join(tmpdir(), 'retina-kv-'));
    mkdirSync(join(dir, 'templates'));
    writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: kv\nversion: 0.0.1\n');
    writeFileSync(join(dir, 'templates', 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kv}\ndata: {kube: "{{ .Capabilities.KubeVersion.Version }}"}\n');
    const t = await tool('helm', ['template', 'kv', dir]);
    assert.match(t.stdout, /kube: "v1\.35\.0"/, t.stdout + t.stderr);
  });

  it('a typo in values fails with the key named, at every depth', async () => {
    for (const [set, key] of [['agent.linux.capabilitiez={BPF}', 'capabilitiez'], ['operatr.enabled=true', 'operatr'], ['config.enablePodLvel=true', 'enablePodLvel']]) {
      const r = await tool('helm', ['template', 'retina', CHART, '--set', set as string]);
      assert.notEqual(r.code, 0, `helm accepted --set ${set}`);
      assert.match(r.stderr, new RegExp(`additional properties? '${key}' not allowed|${key}`), r.stderr);
    }
    const bad = await tool('helm', ['template', 'retina', CHART, '--set', 'agent.linux.config.enabledPlugin={nope}']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /enabledPlugin/);
  });
});

describe('chart: what the objects say', { timeout: 600_000 }, () => {
  it('Linux agent: host network, not privileged, drop ALL + the listed capabilities, probes, downward API, mounts', async () => {
    const { objects } = await render('basic');
    const ds = one(objects, 'DaemonSet', 'retina-agent-linux');
    const spec = podSpec(ds);
    const c = container(ds);
    assert.equal(spec['hostNetwork'], true);
    assert.deepEqual(spec['nodeSelector'], { 'kubernetes.io/os': 'linux' });
    assert.equal(c['securityContext']['privileged'], false);
    assert.deepEqual(c['securityContext']['capabilities']['drop'], ['ALL']);
    const values = parseYaml(await (await import('node:fs/promises')).readFile(`${CHART}/values.yaml`, 'utf8')) as Obj;
    assert.deepEqual(c['securityContext']['capabilities']['add'], values['agent']['linux']['capabilities']);
    assert.deepEqual(c['livenessProbe']['httpGet'], { path: '/healthz', port: 10093 });
    assert.deepEqual(c['readinessProbe']['httpGet'], { path: '/readyz', port: 10093 });
    const env = Object.fromEntries((c['env'] as Obj[]).map((e) => [e['name'], e['valueFrom']?.['fieldRef']?.['fieldPath']]));
    assert.equal(env['NODE_NAME'], 'spec.nodeName');
    assert.equal(env['NODE_IP'], 'status.hostIP');
    const mounts = (c['volumeMounts'] as Obj[]).map((m) => m['mountPath']);
    for (const m of ['/retina/config', '/sys/fs/bpf', '/sys/kernel/btf']) assert.ok(mounts.includes(m), `${m} not mounted: ${mounts.join(', ')}`);
    assert.deepEqual(c['args'], ['--config', '/retina/config/config.yaml']);
    // scrape annotations on the pod template, not on the DaemonSet (Retina's Windows defect)
    assert.equal(ds.metadata.annotations?.['prometheus.io/scrape'], undefined);
    assert.equal((ds as Obj)['spec']['template']['metadata']['annotations']['prometheus.io/port'], '10093');
    // a capability list from values goes straight in
    const { objects: o2 } = await render('basic', ['--set', 'agent.linux.capabilities={BPF,PERFMON}']);
    assert.deepEqual(container(one(o2, 'DaemonSet', 'retina-agent-linux'))['securityContext']['capabilities']['add'], ['BPF', 'PERFMON']);
  });

  it('Linux agent with config.pipelineWorkers: started from its module, not the start-up snapshot (workers cannot start there); a command from values wins', async () => {
    const command = async (args: string[]): Promise<unknown> => container(one((await render('basic', args)).objects, 'DaemonSet', 'retina-agent-linux'))['command'];
    assert.equal(await command([]), undefined, 'the image\'s entrypoint (the snapshot) by default');
    assert.equal(await command(['--set', 'config.pipelineWorkers=0']), undefined);
    const module = ['/usr/local/bin/node', '--max-semi-space-size=2', '--no-allocation-site-pretenuring', '/app/retina-agent.mjs'];
    assert.deepEqual(await command(['--set', 'config.pipelineWorkers=2']), module);
    assert.deepEqual(await command(['--set', 'config.pipelineWorkers=auto']), module);
    assert.deepEqual(await command(['--set', 'config.pipelineWorkers=2', '--set', 'agent.linux.command={/x,y}']), ['/x', 'y']);
    // The flags are bin/retina-agent's, which the image's entrypoint takes too (hack/image/common.sh agent_node_flags).
    assert.match(readFileSync(join(ROOT, 'bin/retina-agent'), 'utf8'), /exec "\$n" --max-semi-space-size=2 --no-allocation-site-pretenuring "\$d\/dist\//);
  });

  it('Windows agent: HostProcess as SYSTEM, sandbox working directory, both probes, small resources, its own tolerations', async () => {
    const { objects } = await render('windows', ['--set', 'agent.linux.tolerations[0].key=only-linux', '--set', 'agent.linux.tolerations[0].operator=Exists']);
    const ds = one(objects, 'DaemonSet', 'retina-agent-windows');
    const spec = podSpec(ds);
    const c = container(ds);
    assert.equal(spec['securityContext']['windowsOptions']['hostProcess'], true);
    assert.equal(spec['securityContext']['windowsOptions']['runAsUserName'], 'NT AUTHORITY\\SYSTEM');
    assert.equal(spec['hostNetwork'], true);
    assert.deepEqual(spec['nodeSelector'], { 'kubernetes.io/os': 'windows' });
    assert.equal(c['workingDir'], '$env:CONTAINER_SANDBOX_MOUNT_POINT');
    assert.match((c['command'] as string[]).join(' '), /CONTAINER_SANDBOX_MOUNT_POINT.*--config/);
    assert.equal(c['readinessProbe']['httpGet']['path'], '/readyz');
    assert.equal(c['livenessProbe']['httpGet']['path'], '/healthz');
    assert.equal(c['resources']['limits']['cpu'], '500m');
    assert.equal(c['securityContext'], undefined, 'Linux security fields copied to Windows');
    assert.deepEqual(spec['tolerations'], [{ operator: 'Exists' }], 'Windows tolerations follow the Linux list');
    assert.equal((ds as Obj)['spec']['template']['metadata']['annotations']['prometheus.io/scrape'], 'true');
    assert.equal(ds.metadata.annotations?.['prometheus.io/scrape'], undefined);
  });

  it('operator: replicas, leader election in the release namespace, probes, non-root, no capabilities', async () => {
    const { objects } = await render('basic', [], 'observability');
    const d = one(objects, 'Deployment', 'retina-operator');
    const c = container(d);
    assert.equal((d as Obj)['spec']['replicas'], 2);
    assert.equal(podSpec(d)['securityContext']['runAsNonRoot'], true);
    assert.deepEqual(c['securityContext']['capabilities'], { drop: ['ALL'] });
    assert.equal(c['securityContext']['allowPrivilegeEscalation'], false);
    assert.equal(c['livenessProbe']['httpGet']['path'], '/healthz');
    assert.equal(c['readinessProbe']['httpGet']['path'], '/readyz');
    const cfg = parseYaml((one(objects, 'ConfigMap', 'retina-operator') as Obj)['data']['operator-config.yaml'] as string) as Obj;
    assert.equal(cfg['enableLeaderElection'], true);
    assert.equal(cfg['leaderElectionNamespace'], 'observability');
    const lease = one(objects, 'Role', 'retina-operator-leader-election');
    assert.equal(lease.metadata.namespace, 'observability');
  });

  it('RBAC: the agent reads no Secrets and writes nothing; the operator reads Secrets only in the listed namespaces', async () => {
    const rulesOf = (o: K8sObject): Obj[] => (o as Obj)['rules'] as Obj[];
    const { objects } = await render('advanced-remote');
    const agentRules = rulesOf(one(objects, 'ClusterRole', 'retina-agent'));
    for (const r of agentRules) {
      assert.ok(!(r['resources'] as string[]).some((x) => x.includes('secret') || x === '*'), JSON.stringify(r));
      assert.deepEqual((r['verbs'] as string[]).filter((v) => !['get', 'list', 'watch'].includes(v)), []);
    }
    const secretRules = (objs: K8sObject[]): string[] => objs.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole')
      .filter((o) => rulesOf(o).some((r) => (r['resources'] as string[]).includes('secrets'))).map((o) => `${o.kind}/${o.metadata.namespace ?? ''}`);
    assert.deepEqual(secretRules(objects), []);
    const { objects: withCaptures } = await render('advanced-remote', ['--set', 'operator.captureSecretNamespaces={capture-a,capture-b}']);
    assert.deepEqual(secretRules(withCaptures).sort(), ['Role/capture-a', 'Role/capture-b']);
    // CRD rights only when the operator installs CRDs
    const crdRule = (objs: K8sObject[]): boolean => rulesOf(one(objs, 'ClusterRole', 'retina-operator')).some((r) => (r['apiGroups'] as string[]).includes('apiextensions.k8s.io'));
    assert.equal(crdRule(objects), false);
    assert.equal(crdRule((await render('basic', ['--set', 'operator.config.installCRDs=true'])).objects), true);
  });

  it('ServiceAccount names from values are the ones bound (Retina hard-codes the agent\'s)', async () => {
    const { objects } = await render('basic', ['--set', 'agent.serviceAccount.name=my-agent', '--set', 'operator.serviceAccount.name=my-op']);
    const subject = (kind: string, name: string): unknown => ((one(objects, kind, name) as Obj)['subjects'] as Obj[])[0]?.['name'];
    assert.equal(subject('ClusterRoleBinding', 'retina-agent'), 'my-agent');
    assert.equal(subject('ClusterRoleBinding', 'retina-operator'), 'my-op');
    assert.equal(podSpec(one(objects, 'DaemonSet', 'retina-agent-linux'))['serviceAccountName'], 'my-agent');
    assert.equal(podSpec(one(objects, 'Deployment', 'retina-operator'))['serviceAccountName'], 'my-op');
    assert.deepEqual(find(objects, 'ServiceAccount').map((o) => o.metadata.name).sort(), ['my-agent', 'my-op']);
  });

  it('helm package makes a chart archive with the schema and the CRDs (for a plain Helm repository)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'retina-pkg-'));
    const r = await tool('helm', ['package', CHART, '-d', dir]);
    assert.equal(r.code, 0, r.stderr);
    const list = (await tool('helm', ['show', 'chart', join(dir, 'retina-0.1.0.tgz')])).stdout;
    assert.match(list, /name: retina/);
    const crds = (await tool('helm', ['show', 'crds', join(dir, 'retina-0.1.0.tgz')])).stdout;
    assert.equal((crds.match(/kind: CustomResourceDefinition/g) ?? []).length, 5);
    const values = (await tool('helm', ['template', 'x', join(dir, 'retina-0.1.0.tgz'), '--set', 'typo=1']));
    assert.notEqual(values.code, 0, 'the packaged chart lost its schema');
  });

  it('the operator disabled renders no operator object at all (Retina renders its Service anyway)', async () => {
    const { objects } = await render('basic', ['--set', 'operator.enabled=false', ...MONITORS]);
    assert.deepEqual(objects.filter((o) => o.metadata.name.includes('operator')).map((o) => `${o.kind}/${o.metadata.name}`), []);
  });

  it('hubble: off by default; on, the agents listen on the node\'s 4244 with the hubble keys, a peer Service selects them, and the relay is a non-root Deployment pointed at it', async () => {
    const off = (await render('basic')).objects;
    assert.deepEqual(off.filter((o) => o.metadata.name.includes('hubble')).map((o) => o.kind), []);
    const { text, objects } = await render('windows', ['--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true', '--set', 'hubble.maxFlows=8192']);
    const r = await kubeconform(text);
    assert.equal(r.summary.invalid + r.summary.errors, 0, r.stdout);
    for (const [ds, cm] of [['retina-agent-linux', 'retina-agent-linux'], ['retina-agent-windows', 'retina-agent-windows']] as const) {
      assert.ok((container(one(objects, 'DaemonSet', ds))['ports'] as Obj[]).some((p) => p['name'] === 'hubble' && p['containerPort'] === 4244), ds);
      const cfg = parseYaml((one(objects, 'ConfigMap', cm) as Obj)['data']['config.yaml'] as string) as Obj;
      assert.deepEqual(cfg['hubble'], { enabled: true, listenAddress: ':4244', maxFlows: 8192 }, cm);
    }
    const peer = one(objects, 'Service', 'retina-hubble-peer') as Obj;
    assert.deepEqual(peer['spec']['ports'], [{ name: 'peer-service', port: 80, targetPort: 4244, protocol: 'TCP' }]);
    assert.equal(peer['spec']['selector']['app.kubernetes.io/component'], 'agent');
    const relay = one(objects, 'Deployment', 'retina-hubble-relay');
    const c = container(relay);
    assert.ok((c['args'] as string[]).includes('--peer-service=retina-hubble-peer.kube-system.svc:80'), JSON.stringify(c['args']));
    assert.equal(podSpec(relay)['securityContext']['runAsNonRoot'], true);
    assert.deepEqual(c['securityContext']['capabilities'], { drop: ['ALL'] });
    assert.deepEqual((one(objects, 'Service', 'retina-hubble-relay') as Obj)['spec']['ports'], [{ name: 'grpc', port: 80, targetPort: 4245, protocol: 'TCP' }]);
    // Relay off: the peer Service alone.
    const noRelay = (await render('basic', ['--set', 'hubble.enabled=true'])).objects;
    assert.deepEqual(noRelay.filter((o) => o.metadata.name.includes('hubble')).map((o) => `${o.kind}/${o.metadata.name}`), ['Service/retina-hubble-peer']);
  });

  it('hubble.metrics (Cilium\'s layout): the entries in both agents\' config, port hubble-metrics on the node, a headless Service Prometheus finds; independent of hubble.enabled', async () => {
    const entries = ['drop:sourceContext=pod;destinationContext=pod', 'flow:labelsContext=source_namespace,destination_namespace'];
    const { text, objects } = await render('windows', ['--set-json', `hubble.metrics.enabled=${JSON.stringify(entries)}`, '--set', 'hubble.metrics.port=9966', '--set', 'config.hubble.metrics.listenAddress=0.0.0.0:9966']);
    const r = await kubeconform(text);
    assert.equal(r.summary.invalid + r.summary.errors, 0, r.stdout);
    for (const [ds, cm] of [['retina-agent-linux', 'retina-agent-linux'], ['retina-agent-windows', 'retina-agent-windows']] as const) {
      assert.ok((container(one(objects, 'DaemonSet', ds))['ports'] as Obj[]).some((p) => p['name'] === 'hubble-metrics' && p['containerPort'] === 9966), ds);
      const cfg = parseYaml((one(objects, 'ConfigMap', cm) as Obj)['data']['config.yaml'] as string) as Obj;
      // config.hubble.metrics.* overrides what the top-level values render, as config.hubble.* does.
      assert.deepEqual(cfg['hubble'], { metrics: { enabled: entries, listenAddress: '0.0.0.0:9966' } }, cm);
    }
    const svc = one(objects, 'Service', 'retina-hubble-metrics') as Obj;
    assert.equal(svc['spec']['clusterIP'], 'None');
    assert.deepEqual(svc['spec']['ports'], [{ name: 'hubble-metrics', port: 9966, targetPort: 'hubble-metrics', protocol: 'TCP' }]);
    assert.deepEqual(svc['metadata']['annotations'], { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '9966' });
    assert.equal(svc['spec']['selector']['app.kubernetes.io/component'], 'agent');
    const off = (await render('basic')).objects;
    assert.equal(find(off, 'Service', 'retina-hubble-metrics').length, 0);
    assert.ok(!(container(one(off, 'DaemonSet', 'retina-agent-linux'))['ports'] as Obj[]).some((p) => p['name'] === 'hubble-metrics'));
  });

  it('hubble.tls: the chart makes a CA and the certificates (helm) or cert-manager Certificates; agents mount theirs and load the TLS keys, the relay its client certificate', async () => {
    const { text, objects } = await render('windows', ['--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true', '--set', 'hubble.tls.enabled=true', '--set', 'config.hubble.clusterName=prod.eu']);
    const r = await kubeconform(text);
    assert.equal(r.summary.invalid + r.summary.errors, 0, r.stdout);
    const secret = (name: string): Obj => one(objects, 'Secret', name) as Obj;
    const pem = (s: Obj, k: string): X509Certificate => new X509Certificate(Buffer.from(s['data'][k] as string, 'base64'));
    const ca = pem(secret('retina-hubble-ca'), 'ca.crt');
    const server = pem(secret('retina-hubble-server-certs'), 'tls.crt');
    const client = pem(secret('retina-hubble-relay-client-certs'), 'tls.crt');
    assert.ok(server.verify(ca.publicKey) && client.verify(ca.publicKey), 'both signed by the chart\'s CA');
    assert.equal(server.checkHost('node-1.prod-eu.hubble-grpc.cilium.io'), '*.prod-eu.hubble-grpc.cilium.io');
    assert.equal(server.checkHost('hubble-peer.prod-eu.hubble-grpc.cilium.io'), '*.prod-eu.hubble-grpc.cilium.io', 'the relay\'s name for the peer service');
    assert.equal(server.checkHost('node-1.default.hubble-grpc.cilium.io'), undefined);
    assert.equal(secret('retina-hubble-server-certs')['data']['ca.crt'], secret('retina-hubble-ca')['data']['ca.crt']);
    for (const [ds, cm, dir] of [['retina-agent-linux', 'retina-agent-linux', '/retina/hubble-tls'], ['retina-agent-windows', 'retina-agent-windows', 'hubble-tls']] as const) {
      const cfg = parseYaml((one(objects, 'ConfigMap', cm) as Obj)['data']['config.yaml'] as string) as Obj;
      assert.deepEqual(cfg['hubble']['tls'], { enabled: true, certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key`, clientCAFiles: [`${dir}/ca.crt`] }, cm);
      assert.equal(cfg['hubble']['clusterName'], 'prod.eu');
      assert.ok((container(one(objects, 'DaemonSet', ds))['volumeMounts'] as Obj[]).some((m) => m['name'] === 'hubble-tls' && m['mountPath'] === dir), ds);
      assert.ok((podSpec(one(objects, 'DaemonSet', ds))['volumes'] as Obj[]).some((v) => v['secret']?.['secretName'] === 'retina-hubble-server-certs'), ds);
    }
    const relay = one(objects, 'Deployment', 'retina-hubble-relay');
    const args = container(relay)['args'] as string[];
    for (const a of ['--cluster-name=prod-eu', '--tls-hubble-server-ca-files=/var/lib/hubble-relay/tls/ca.crt', '--tls-hubble-client-cert-file=/var/lib/hubble-relay/tls/tls.crt', '--tls-hubble-client-key-file=/var/lib/hubble-relay/tls/tls.key']) assert.ok(args.includes(a), `${a} in ${JSON.stringify(args)}`);
    assert.ok(!args.includes('--disable-client-tls'));
    assert.deepEqual(podSpec(relay)['volumes'], [{ name: 'tls', secret: { secretName: 'retina-hubble-relay-client-certs' } }]);
    // cert-manager: Certificates instead of Secrets; an issuer is required.
    const cm = (await render('basic', ['--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true', '--set', 'hubble.tls.enabled=true', '--set', 'hubble.tls.auto.method=certmanager',
      '--set', 'hubble.tls.auto.certManagerIssuerRef.kind=ClusterIssuer', '--set', 'hubble.tls.auto.certManagerIssuerRef.name=ca'])).objects;
    assert.deepEqual(cm.filter((o) => o.kind === 'Certificate').map((o) => (o as Obj)['spec']['secretName']), ['retina-hubble-server-certs', 'retina-hubble-relay-client-certs']);
    assert.deepEqual(cm.filter((o) => o.kind === 'Secret' && o.metadata.name.includes('hubble')), []);
    await assert.rejects(render('basic', ['--set', 'hubble.enabled=true', '--set', 'hubble.tls.enabled=true', '--set', 'hubble.tls.auto.method=certmanager']), /certManagerIssuerRef/);
    // Brought Secrets: none made, the named ones mounted.
    const own = (await render('basic', ['--set', 'hubble.enabled=true', '--set', 'hubble.relay.enabled=true', '--set', 'hubble.tls.enabled=true', '--set', 'hubble.tls.auto.enabled=false',
      '--set', 'hubble.tls.server.existingSecret=mine', '--set', 'hubble.relay.tls.client.existingSecret=relay-mine'])).objects;
    assert.deepEqual(own.filter((o) => o.kind === 'Secret' && o.metadata.name.includes('hubble')), []);
    assert.ok((podSpec(one(own, 'DaemonSet', 'retina-agent-linux'))['volumes'] as Obj[]).some((v) => v['secret']?.['secretName'] === 'mine'));
    assert.deepEqual(podSpec(one(own, 'Deployment', 'retina-hubble-relay'))['volumes'], [{ name: 'tls', secret: { secretName: 'relay-mine' } }]);
  });

  it('flowLogs.otlp: endpoint, protocol, compression and the TLS Secret\'s paths in both agents\' config; the headers from their Secret as an env variable, no credential in a ConfigMap', async () => {
    const set = ['config.flowLogs.enabled=true', 'flowLogs.otlp.endpoint=https://otel.monitoring:4318', 'flowLogs.otlp.protocol=http/protobuf', 'flowLogs.otlp.compression=gzip',
      'flowLogs.otlp.headers.secretName=otlp-auth', 'flowLogs.otlp.headers.secretKey=otel-headers', 'flowLogs.otlp.tls.secretName=otlp-certs', 'flowLogs.otlp.tls.clientCertificate=true',
      'flowLogs.otlp.tls.serverName=otel.example'].flatMap((x) => ['--set', x]);
    const { text, objects } = await render('windows', set);
    const r = await kubeconform(text);
    assert.equal(r.summary.invalid + r.summary.errors, 0, r.stdout);
    for (const [ds, cm, dir] of [['retina-agent-linux', 'retina-agent-linux', '/retina/otlp-tls'], ['retina-agent-windows', 'retina-agent-windows', 'otlp-tls']] as const) {
      const cmText = (one(objects, 'ConfigMap', cm) as Obj)['data']['config.yaml'] as string;
      const cfg = parseYaml(cmText) as Obj;
      assert.deepEqual(cfg['flowLogs'], {
        enabled: true,
        otlp: { endpoint: 'https://otel.monitoring:4318', protocol: 'http/protobuf', compression: 'gzip', tls: { caFile: `${dir}/ca.crt`, certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key`, serverName: 'otel.example' } },
      }, cm);
      assert.doesNotMatch(cmText, /headers|otlp-auth|otel-headers/, `${cm}: no header and no Secret reference in the ConfigMap`);
      const c = container(one(objects, 'DaemonSet', ds));
      assert.deepEqual((c['env'] as Obj[]).filter((e) => e['name'] === 'RETINA_FLOWLOGS_OTLP_HEADERS'),
        [{ name: 'RETINA_FLOWLOGS_OTLP_HEADERS', valueFrom: { secretKeyRef: { name: 'otlp-auth', key: 'otel-headers' } } }], ds);
      assert.deepEqual((c['volumeMounts'] as Obj[]).filter((m) => m['name'] === 'otlp-tls'), [{ name: 'otlp-tls', mountPath: dir, readOnly: true }], ds);
      assert.deepEqual((podSpec(one(objects, 'DaemonSet', ds))['volumes'] as Obj[]).filter((v) => v['name'] === 'otlp-tls'), [{ name: 'otlp-tls', secret: { secretName: 'otlp-certs' } }], ds);
    }
    // The chart makes no Secret of its own for the sink, and reads none (the kubelet does).
    assert.deepEqual(objects.filter((o) => o.kind === 'Secret' && /otlp/.test(o.metadata.name)), []);
    // Off (no endpoint): nothing rendered, however the rest is set.
    const off = (await render('windows', [...set.slice(0, 2), ...set.slice(4)])).objects;
    for (const cm of ['retina-agent-linux', 'retina-agent-windows']) {
      assert.equal((parseYaml((one(off, 'ConfigMap', cm) as Obj)['data']['config.yaml'] as string) as Obj)['flowLogs']['otlp'], undefined, cm);
    }
    for (const ds of ['retina-agent-linux', 'retina-agent-windows']) {
      const c = container(one(off, 'DaemonSet', ds));
      assert.ok(!(c['env'] as Obj[]).some((e) => e['name'] === 'RETINA_FLOWLOGS_OTLP_HEADERS') && !(c['volumeMounts'] as Obj[]).some((m) => m['name'] === 'otlp-tls'), ds);
    }
    // Without a TLS Secret: no paths (the system's roots verify the collector), no mount.
    const plain = (await render('basic', ['--set', 'config.flowLogs.enabled=true', '--set', 'flowLogs.otlp.endpoint=http://otel.monitoring:4317'])).objects;
    assert.deepEqual((parseYaml((one(plain, 'ConfigMap', 'retina-agent-linux') as Obj)['data']['config.yaml'] as string) as Obj)['flowLogs']['otlp'],
      { endpoint: 'http://otel.monitoring:4317', protocol: 'grpc', compression: 'none' });
    // Mistakes stop the install, naming the value.
    await assert.rejects(render('basic', ['--set', 'flowLogs.otlp.endpoint=http://otel:4317']), /flowLogs\.otlp\.endpoint.*config\.flowLogs\.enabled/);
    await assert.rejects(render('basic', ['--set', 'config.flowLogs.enabled=true', '--set', 'flowLogs.otlp.endpoint=http://otel:4317', '--set', 'flowLogs.otlp.tls.secretName=c']), /flowLogs\.otlp\.tls\.secretName.*https:\/\//);
    await assert.rejects(render('basic', ['--set', 'config.flowLogs.enabled=true', '--set', 'flowLogs.otlp.endpoint=https://otel:4317', '--set', 'flowLogs.otlp.tls.clientCertificate=true']), /flowLogs\.otlp\.tls\.clientCertificate/);
    await assert.rejects(render('basic', ['--set', 'flowLogs.otlp.protocol=http']), /protocol/);
  });

  it('the Service Azure Monitor scrapes: network-observability in the release namespace, port named retina', async () => {
    const { objects } = await render('basic');
    const svc = one(objects, 'Service', 'network-observability') as Obj;
    assert.equal(svc['metadata']['namespace'], 'kube-system');
    assert.deepEqual(svc['spec']['ports'], [{ name: 'retina', port: 10093, targetPort: 10093, protocol: 'TCP' }]);
    assert.equal(find(objects, 'Service').length, 1);
  });

  it('ServiceMonitor/PodMonitor for both API groups, only when enabled and served', async () => {
    const groups = (objs: K8sObject[], kind: string): string[] => find(objs, kind).map((o) => o.apiVersion).sort();
    const on = (await render('basic', MONITORS)).objects;
    assert.deepEqual(groups(on, 'ServiceMonitor'), ['azmonitoring.coreos.com/v1', 'monitoring.coreos.com/v1']);
    // agents (Retina's metrics.podMonitor) and the operator, in each group
    assert.deepEqual(groups(on, 'PodMonitor'), ['azmonitoring.coreos.com/v1', 'azmonitoring.coreos.com/v1', 'monitoring.coreos.com/v1', 'monitoring.coreos.com/v1']);
    assert.deepEqual(find(on, 'PodMonitor').map((o) => o.metadata.name).sort(), ['retina-agent', 'retina-agent', 'retina-operator', 'retina-operator']);
    const sm = find(on, 'ServiceMonitor')[0] as Obj;
    assert.equal(sm['spec']['endpoints'][0]['port'], 'retina');
    // enabled, but the cluster serves only one group
    const one_ = (await render('basic', ['--set', 'monitoring.serviceMonitor.enabled=true', '--api-versions', 'azmonitoring.coreos.com/v1/ServiceMonitor'])).objects;
    assert.deepEqual(groups(one_, 'ServiceMonitor'), ['azmonitoring.coreos.com/v1']);
    assert.deepEqual(groups((await render('basic')).objects, 'ServiceMonitor'), []);
  });

  it('metricsSecurity: off by default (plain HTTP, no review rights); hardened: TLS Secret mounted, HTTPS probes, auth keys, review RBAC, reader role, secure monitors', async () => {
    const rulesOf = (o: K8sObject): Obj[] => (o as Obj)['rules'] as Obj[];
    const reviews = (o: K8sObject): string[] => rulesOf(o).filter((r) => (r['resources'] as string[] | undefined)?.some((x) => x.endsWith('reviews'))).flatMap((r) => [...(r['resources'] as string[]), ...(r['verbs'] as string[])]);
    const config = (objs: K8sObject[], name: string, key: string): Obj => parseYaml(((one(objs, 'ConfigMap', name) as Obj)['data'] as Record<string, string>)[key] as string) as Obj;
    const basic = (await render('basic', MONITORS)).objects;
    assert.equal(config(basic, 'retina-agent-linux', 'config.yaml')['metricsTLS'], undefined);
    assert.equal(config(basic, 'retina-agent-linux', 'config.yaml')['metricsAuth'], undefined);
    assert.deepEqual(reviews(one(basic, 'ClusterRole', 'retina-agent')), []);
    assert.equal(find(basic, 'ClusterRole', 'retina-metrics-reader').length, 0);
    assert.equal(container(one(basic, 'DaemonSet', 'retina-agent-linux'))['livenessProbe']['httpGet']['scheme'], undefined);
    assert.equal((find(basic, 'ServiceMonitor')[0] as Obj)['spec']['endpoints'][0]['scheme'], 'http');

    const { objects } = await render('hardened', [...MONITORS, '--set', 'metricsSecurity.auth.scrapers[0].name=prometheus-k8s', '--set', 'metricsSecurity.auth.scrapers[0].namespace=monitoring']);
    const tlsKeys = { certFile: '/retina/metrics-tls/tls.crt', keyFile: '/retina/metrics-tls/tls.key' };
    for (const [cm, key] of [['retina-agent-linux', 'config.yaml'], ['retina-operator', 'operator-config.yaml']] as const) {
      assert.deepEqual(config(objects, cm, key)['metricsTLS'], tlsKeys, cm);
      assert.deepEqual(config(objects, cm, key)['metricsAuth'], { enabled: true }, cm);
    }
    for (const [kind, name] of [['DaemonSet', 'retina-agent-linux'], ['Deployment', 'retina-operator']] as const) {
      const spec = podSpec(one(objects, kind, name));
      assert.deepEqual((spec['volumes'] as Obj[]).find((v) => v['name'] === 'metrics-tls'), { name: 'metrics-tls', secret: { secretName: 'retina-metrics-tls' } }, name);
      assert.deepEqual((container(one(objects, kind, name))['volumeMounts'] as Obj[]).find((v) => v['name'] === 'metrics-tls'), { name: 'metrics-tls', mountPath: '/retina/metrics-tls', readOnly: true }, name);
    }
    // The kubelet probes the agent over HTTPS (it does not verify the certificate), without a token.
    const agent = container(one(objects, 'DaemonSet', 'retina-agent-linux'));
    assert.equal(agent['livenessProbe']['httpGet']['scheme'], 'HTTPS');
    assert.equal(agent['readinessProbe']['httpGet']['scheme'], 'HTTPS');
    for (const role of ['retina-agent', 'retina-operator']) assert.deepEqual(reviews(one(objects, 'ClusterRole', role)), ['tokenreviews', 'create', 'subjectaccessreviews', 'create'], role);
    assert.deepEqual(rulesOf(one(objects, 'ClusterRole', 'retina-metrics-reader')), [{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    assert.deepEqual((one(objects, 'ClusterRoleBinding', 'retina-metrics-reader') as Obj)['subjects'], [{ kind: 'ServiceAccount', name: 'prometheus-k8s', namespace: 'monitoring' }]);
    for (const m of [...find(objects, 'ServiceMonitor').map((o) => (o as Obj)['spec']['endpoints'][0]), ...find(objects, 'PodMonitor').map((o) => (o as Obj)['spec']['podMetricsEndpoints'][0])] as Obj[]) {
      assert.equal(m['scheme'], 'https');
      assert.deepEqual(m['tlsConfig'], { ca: { secret: { name: 'retina-metrics-tls', key: 'ca.crt' } }, serverName: 'network-observability.kube-system.svc' });
      assert.equal(m['bearerTokenFile'], '/var/run/secrets/kubernetes.io/serviceaccount/token');
    }
    // The Windows agent (HostProcess): the Secret mounted and the paths relative to its sandbox working directory.
    const win = (await render('windows', ['--set', 'metricsSecurity.tls.enabled=true', '--set', 'metricsSecurity.auth.enabled=true'])).objects;
    assert.deepEqual(config(win, 'retina-agent-windows', 'config.yaml')['metricsTLS'], { certFile: 'metrics-tls/tls.crt', keyFile: 'metrics-tls/tls.key' });
    assert.deepEqual(config(win, 'retina-agent-windows', 'config.yaml')['metricsAuth'], { enabled: true });
    const winAgent = container(one(win, 'DaemonSet', 'retina-agent-windows'));
    assert.deepEqual((winAgent['volumeMounts'] as Obj[]).find((v) => v['name'] === 'metrics-tls'), { name: 'metrics-tls', mountPath: 'metrics-tls', readOnly: true });
    assert.equal(winAgent['readinessProbe']['httpGet']['scheme'], 'HTTPS');
    assert.deepEqual(config(win, 'retina-agent-linux', 'config.yaml')['metricsTLS'], tlsKeys);
    // cert-manager: a Certificate for the Secret, named for the scrapers' serverName, only with an issuer.
    assert.equal(find(objects, 'Certificate').length, 0);
    const cm = (await render('hardened', ['--set', 'metricsSecurity.tls.certManager.issuerRef.name=my-ca', '--set', 'metricsSecurity.tls.certManager.issuerRef.kind=ClusterIssuer'])).objects;
    const cert = one(cm, 'Certificate', 'retina-metrics-tls') as Obj;
    assert.deepEqual([cert['spec']['secretName'], cert['spec']['dnsNames'], cert['spec']['issuerRef']], ['retina-metrics-tls', ['network-observability.kube-system.svc'], { name: 'my-ca', kind: 'ClusterIssuer' }]);
  });

  it('per-component placement: nodeSelector, tolerations, affinity, priorityClass, resources, image per OS', async () => {
    const { objects } = await render('windows', [
      '--set', 'agent.linux.nodeSelector.pool=a', '--set', 'agent.windows.nodeSelector.pool=b', '--set', 'operator.nodeSelector.pool=c',
      '--set', 'agent.linux.priorityClassName=pl', '--set', 'agent.windows.priorityClassName=pw', '--set', 'operator.priorityClassName=po',
      '--set', 'image.linux.tag=1.2.3', '--set', 'image.windows.repository=example.com/win', '--set', 'image.windows.tag=9',
    ]);
    const l = one(objects, 'DaemonSet', 'retina-agent-linux');
    const w = one(objects, 'DaemonSet', 'retina-agent-windows');
    const o = one(objects, 'Deployment', 'retina-operator');
    assert.deepEqual([podSpec(l)['nodeSelector']['pool'], podSpec(w)['nodeSelector']['pool'], podSpec(o)['nodeSelector']['pool']], ['a', 'b', 'c']);
    assert.deepEqual([podSpec(l)['priorityClassName'], podSpec(w)['priorityClassName'], podSpec(o)['priorityClassName']], ['pl', 'pw', 'po']);
    assert.deepEqual([container(l)['image'], container(w)['image'], container(o)['image']], ['ghcr.io/retina-ts/retina-ts:1.2.3', 'example.com/win:9', 'ghcr.io/retina-ts/retina-ts:1.2.3']);
    assert.deepEqual(podSpec(o)['tolerations'], [{ key: 'CriticalAddonsOnly', operator: 'Exists' }]);
  });
});
