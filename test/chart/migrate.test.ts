/**
 * `kubectl retina migrate-values` on Microsoft Retina's own values files (test/fixtures/retina,
 * SOURCES.md): the converted values lint and render with real helm, and the agents (and operator) get
 * the same effective config as Retina's chart gives Retina's: Retina's chart (kept as a fixture) is
 * rendered with the same values, both config.yaml files are loaded with our agent's loader, and every
 * field is compared. Our chart, given Retina's values, stops with a message naming the command and our
 * key for each Retina key.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { agentConfig, agentKeys, collectSpecs, loadValues, type ConfigSpec, type KeySpec } from '../../src/config/index.js';
import { operatorKeys } from '../../src/operator/index.js';
import { loadPlugins } from '../../src/platform/index.js';
import type { OsName } from '../../src/plugin/index.js';
import { migrateValuesText } from '../../src/cli/migrate-values.js';
import { main } from '../../src/cli/kubectl-retina.js';
import { CHART, ROOT, find, one, parseObjects, render, tool, type K8sObject } from './helm.js';

const FIX = join(ROOT, 'test/fixtures/retina');
const RETINA_CHART = join(FIX, 'standard-chart');
const STANDARD = join(RETINA_CHART, 'values.yaml');
const HUBBLE_CHART = join(FIX, 'hubble-chart');
const HUBBLE = join(HUBBLE_CHART, 'values.yaml');
const override = (n: string): string => join(FIX, 'overrides', `${n}.yaml`);
const OVERRIDES = ['docs-basic', 'docs-advanced-remote', 'docs-advanced-local', 'typical', 'test-profiles-advanced', 'test-profiles-localctx'];

const dir = mkdtempSync(join(tmpdir(), 'rt-migrate-'));
async function convert(files: readonly string[]): Promise<{ file: string; values: Record<string, unknown>; unmapped: readonly { key: string; why: string }[] }> {
  const r = await migrateValuesText(files.map((f) => readFileSync(f, 'utf8')));
  const file = join(dir, `converted-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, r.yaml);
  return { file, values: parse(r.yaml) as Record<string, unknown>, unmapped: r.unmapped };
}

const data = (o: K8sObject, key: string): string => (o['data'] as Record<string, string>)[key] as string;

async function effective(os: OsName, text: string): Promise<Record<string, unknown>> {
  const plugins = await loadPlugins(os);
  const keys = agentKeys({ os, names: plugins.map((p) => p.name), defaults: plugins.filter((p) => p.defaultEnabled).map((p) => p.name) });
  const values = loadValues({ fileText: text, filePath: `${os}.yaml`, env: {}, specs: collectSpecs(keys, ...plugins.map((p) => p.config as ConfigSpec<object>)) });
  return { ...agentConfig(keys, values) } as Record<string, unknown>;
}

/** Retina's chart rendered with Retina's values files (helm's order). */
async function renderRetina(files: readonly string[], chart = RETINA_CHART): Promise<K8sObject[]> {
  const r = await tool('helm', ['template', 'retina', chart, '-n', 'kube-system', ...files.flatMap((f) => ['-f', f])]);
  assert.equal(r.code, 0, r.stderr);
  return parseObjects(r.stdout);
}

/** Compares the agents' (and the operator's) effective config, field by field. */
async function sameEffectiveConfig(retinaFiles: readonly string[], extra: readonly string[] = [], chart = RETINA_CHART): Promise<void> {
  const retina = await renderRetina(retinaFiles, chart);
  const c = await convert(retinaFiles);
  const ourFiles = [c.file, ...extra].flatMap((f) => ['-f', f]);
  const lint = await tool('helm', ['lint', '--strict', CHART, ...ourFiles]);
  assert.equal(lint.code, 0, `helm lint: ${lint.stdout}${lint.stderr}`);
  const ours = (await render(undefined, ourFiles)).objects;
  for (const [os, theirs, mine] of [['linux', 'retina-config', 'retina-agent-linux'], ['windows', 'retina-config-win', 'retina-agent-windows']] as const) {
    const r = find(retina, 'ConfigMap', theirs);
    const m = find(ours, 'ConfigMap', mine);
    assert.equal(m.length, r.length, `${os} agent rendered by both charts or by neither`);
    if (r.length === 0) continue;
    const want = await effective(os, data(r[0] as K8sObject, 'config.yaml'));
    const got = await effective(os, data(m[0] as K8sObject, 'config.yaml'));
    for (const k of Object.keys(want)) {
      // Retina's Hubble chart switches Hubble on with Cilium's keys (enable-hubble, below), not in config.yaml.
      if ((k === 'hubble' || k === 'hubbleMetrics') && chart === HUBBLE_CHART) continue;
      assert.deepEqual(got[k], want[k], `${os} agent: ${k}`);
    }
    if (chart === HUBBLE_CHART) {
      const cilium = (r[0] as K8sObject)['data'] as Record<string, string>;
      const h = got['hubble'] as { enabled: boolean; maxFlows: number };
      assert.equal(String(h.enabled), cilium['enable-hubble'], 'enable-hubble');
      assert.equal(String(h.maxFlows), cilium['hubble-event-buffer-capacity'], 'hubble-event-buffer-capacity');
      // And its Hubble metrics with Cilium's hubble-metrics (entries separated by spaces) and hubble-metrics-server.
      const hm = got['hubbleMetrics'] as { metrics: { entry: string }[]; refused: unknown[]; listen: { port: number } };
      assert.deepEqual(hm.metrics.map((x) => x.entry), (cilium['hubble-metrics'] ?? '').trim().split(/\s+/), 'hubble-metrics');
      assert.deepEqual(hm.refused, []);
      assert.equal(`:${hm.listen.port}`, cilium['hubble-metrics-server'], 'hubble-metrics-server');
    }
  }
  const rOp = find(retina, 'ConfigMap', 'retina-operator-config');
  if (rOp.length) {
    const theirs = parse(data(rOp[0] as K8sObject, 'operator-config.yaml')) as Record<string, unknown>;
    const keys = operatorKeys();
    const load = (t: string) => loadValues({ fileText: t, env: {}, specs: collectSpecs(keys as ConfigSpec<object>) });
    const want = load(data(rOp[0] as K8sObject, 'operator-config.yaml'));
    const got = load(data(one(ours, 'ConfigMap', 'retina-operator'), 'operator-config.yaml'));
    const compared = Object.values(keys).filter((k) => k.key in theirs);
    assert.ok(compared.length >= 4, 'Retina\'s operator keys ours knows');
    for (const k of compared) assert.deepEqual(got.get(k as KeySpec<unknown>), want.get(k as KeySpec<unknown>), `operator: ${k.key}`);
  } else if (chart === RETINA_CHART) assert.equal(find(ours, 'Deployment', 'retina-operator').length, 0, 'no operator in either');
  // (The Hubble chart's operator manages Cilium's CRDs from a config directory: no config of ours to compare.)
}

describe('kubectl retina migrate-values: Retina\'s values in, ours out', { timeout: 900_000 }, () => {
  it('our chart given Retina\'s values stops, naming the command and our key for each Retina key', async () => {
    for (const f of [STANDARD, override('typical')]) {
      const r = await tool('helm', ['template', 'retina', CHART, '-n', 'kube-system', '-f', f]);
      assert.notEqual(r.code, 0);
      assert.match(r.stderr, /kubectl retina migrate-values -f <values file>/);
      assert.match(r.stderr, /enablePodLevel: ours is config\.enablePodLevel/);
      assert.match(r.stderr, /operator\.enableRetinaEndpoint: ours is operator\.config\.enableRetinaEndpoint/);
      assert.match(r.stderr, /image\.tag: not mapped: Retina's image/);
    }
    // Every top-level key of Retina's standard values gets that message rather than a bare schema error.
    const r = await tool('helm', ['template', 'retina', CHART, '-f', STANDARD]);
    const named = new Set([...r.stderr.matchAll(/^ {2}([\w.]+):/gm)].map((m) => (m[1] as string).split('.')[0]));
    const ourOwn = new Set(['imagePullSecrets', 'fullnameOverride', 'operator', 'image', 'agent', 'service', 'hubble']);
    const top = Object.keys(parse(readFileSync(STANDARD, 'utf8')) as object).filter((k) => !ourOwn.has(k));
    assert.deepEqual(top.filter((k) => !named.has(k)), [], 'Retina keys without the message');
  });

  it('the old meaning of service.name (the Service\'s name) is refused with the new key named', async () => {
    const r = await tool('helm', ['template', 'retina', CHART, '--set', 'service.name=network-observability']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /service\.name "network-observability": service\.name is the Service port's name.*service\.serviceName/);
  });

  it('Retina\'s standard values.yaml: every key mapped or named, same effective config', async () => {
    const c = await convert([STANDARD]);
    const named = new Set(c.unmapped.map((u) => u.key));
    for (const k of ['image.tag', 'operator.tag', 'azure.appinsights.instrumentation_key', 'packetParserRingBuffer', 'namespace']) assert.ok(named.has(k), `${k} named`);
    for (const u of c.unmapped) assert.ok(u.why.length > 10, `${u.key} has a reason`);
    assert.deepEqual((c.values['config'] as Record<string, unknown>)['enablePodLevel'], false);
    assert.equal((c.values['service'] as Record<string, unknown>)['name'], 'retina');
    await sameEffectiveConfig([STANDARD]);
  });

  for (const o of OVERRIDES) {
    it(`override ${o}: alone it converts, lints and renders; over Retina's values.yaml the effective config is Retina's`, async () => {
      const alone = await convert([override(o)]);
      const lint = await tool('helm', ['lint', '--strict', CHART, '-f', alone.file]);
      assert.equal(lint.code, 0, lint.stdout + lint.stderr);
      const set = Object.keys(parse(readFileSync(override(o), 'utf8')) as object);
      assert.ok(set.length > 0);
      await sameEffectiveConfig([STANDARD, override(o)]);
    });
  }

  it('a mapping that loses a key is caught (the comparison can fail)', async () => {
    const lose = join(dir, 'lose.yaml');
    writeFileSync(lose, 'config: {logLevel: null, enablePodLevel: null}\n'); // as if the two keys had not been mapped
    await assert.rejects(sameEffectiveConfig([STANDARD, override('docs-advanced-remote')], [lose]), /linux agent: (logLevel|enablePodLevel)/);
  });

  it('the typical override keeps 7 of its 9 keys (image.tag, operator.tag named: Retina\'s images)', async () => {
    const c = await convert([override('typical')]);
    assert.deepEqual(c.unmapped.map((u) => u.key).sort(), ['image.tag', 'operator.tag']);
    assert.deepEqual(c.values, {
      agent: { linux: { enabled: true, config: { enabledPlugin: ['dropreason', 'packetforward', 'linuxutil', 'dns', 'packetparser'] } }, windows: { enabled: false } },
      config: { logLevel: 'debug', enablePodLevel: true, enableAnnotations: false, remoteContext: true },
      operator: { enabled: true, config: { enableRetinaEndpoint: true } },
    });
  });

  it('Retina\'s Hubble chart values: same effective agent config as its chart\'s config.yaml and Hubble keys', async () => {
    await sameEffectiveConfig([HUBBLE], [], HUBBLE_CHART);
  });

  it('Retina\'s Hubble chart values: Hubble and relay carried over, Cilium-only keys named, renders', async () => {
    const c = await convert([HUBBLE]);
    const { export: exported, ...hubble } = c.values['hubble'] as Record<string, unknown>;
    assert.deepEqual(hubble, {
      enabled: true, port: 4244, maxFlows: 4095,
      // Retina's Hubble chart runs mutual TLS between the relay and the agents (Cilium's certgen cronJob): ours makes the certificates itself.
      tls: { enabled: true, auto: { enabled: true, method: 'helm', certValidityDuration: 120, certManagerIssuerRef: {} }, server: { extraDnsNames: [], extraIpAddresses: [] } },
      relay: { enabled: true, image: 'quay.io/cilium/hubble-relay:v1.19.5', replicas: 1, nodeSelector: { 'kubernetes.io/os': 'linux' }, tolerations: [] },
      // Its Hubble metrics (Cilium's syntax, port 9965) carried over: ours serves them (docs/hubble.md#hubble-metrics).
      metrics: {
        enabled: [
          'flow:sourceEgressContext=pod;destinationIngressContext=pod', 'tcp:sourceEgressContext=pod;destinationIngressContext=pod',
          'dns:query;sourceEgressContext=pod;destinationIngressContext=pod', 'drop:sourceEgressContext=pod;destinationIngressContext=pod',
        ],
        port: 9965,
      },
    });
    // Its hubble.export (Cilium's older layout: the file size and backups beside static) carried over.
    const ex = exported as { static: Record<string, unknown>; dynamic: Record<string, unknown> };
    assert.equal(ex.static['filePath'], '/var/run/cilium/hubble/events.log');
    assert.equal(ex.static['fileMaxSizeMb'], 10);
    assert.equal(ex.static['fileMaxBackups'], 5);
    assert.equal(ex.dynamic['enabled'], false);
    const named = new Set(c.unmapped.map((u) => u.key));
    for (const k of ['hubble.ui.enabled', 'hubble.tls.auto.schedule', 'hubble.metrics.enableOpenMetrics', 'hubble.metrics.serviceMonitor.enabled', 'operator.identityGCInterval', 'cluster.name']) assert.ok(named.has(k), `${k} named`);
    const lint = await tool('helm', ['lint', '--strict', CHART, '-f', c.file]);
    assert.equal(lint.code, 0, lint.stdout + lint.stderr);
    const { objects } = await render(undefined, ['-f', c.file]);
    const cfg = parse(data(one(objects, 'ConfigMap', 'retina-agent-linux'), 'config.yaml')) as Record<string, unknown>;
    assert.equal(cfg['enablePodLevel'], true);
    assert.equal(cfg['bypassLookupIPOfInterest'], true);
    assert.deepEqual((cfg['hubble'] as Record<string, unknown>)['enabled'], true);
    assert.deepEqual((cfg['hubble'] as Record<string, unknown>)['metrics'], { enabled: ((c.values['hubble'] as Record<string, Record<string, unknown>>)['metrics'] as Record<string, unknown>)['enabled'], listenAddress: ':9965' });
    assert.equal(find(objects, 'Service', 'retina-hubble-metrics').length, 1);
    assert.equal(find(objects, 'Deployment', 'retina-hubble-relay').length, 1);
    assert.equal(find(objects, 'Secret', 'retina-hubble-server-certs').length, 1);
  });

  it('the kubectl-retina command prints the values on stdout and the unmapped keys on stderr', async () => {
    const out = join(dir, 'cli.yaml');
    const code = await main(['migrate-values', '-f', override('typical'), '-o', out], {});
    assert.equal(code, 0);
    const text = readFileSync(out, 'utf8');
    assert.match(text, /^# {3}image\.tag: Retina's image/m);
    assert.equal((parse(text) as { config: { remoteContext: boolean } }).config.remoteContext, true);
    assert.equal(await main(['migrate-values'], {}), 2, 'no -f');
  });
});
