/**
 * Stored flow logs' keys: Cilium's two spellings (Helm values' shape and agent flags / cilium-config
 * keys, as its own docs and ConfigMaps write them), which wins, the per-OS defaults, and errors that
 * name the key.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigErrors } from './errors.js';
import { ACNS_LINUX_PATH, flowLogsConfig, flowLogsKeys, splitJsonObjects, WINDOWS_FLOW_LOG_PATH } from './flow-logs.js';
import { loadValues } from './load.js';

function load(yaml: string, os = 'linux', env: Record<string, string> = {}) {
  const keys = flowLogsKeys(os);
  return flowLogsConfig(keys, loadValues({ fileText: yaml, env, specs: Object.values(keys) }));
}

test('nothing configured: every exporter off', () => {
  const c = load('');
  assert.equal(c.static, undefined);
  assert.equal(c.dynamic, undefined);
  assert.equal(c.cnl, undefined);
});

test('Cilium\'s Helm shape: hubble.export.static with lists of FlowFilter mappings', () => {
  const c = load(`hubble:
  export:
    static:
      enabled: true
      filePath: /var/run/cilium/hubble/events.log
      fileMaxSizeMb: 30
      fileMaxBackups: 2
      fileCompress: true
      allowList: [{verdict: [DROPPED, ERROR]}, '{"source_pod":["kube-system/kube-dns"]}']
      denyList: [{source_pod: ["kube-system/"]}]
      fieldMask: [time, source.namespace, verdict]
`);
  assert.deepEqual(c.static?.file, { path: '/var/run/cilium/hubble/events.log', maxSizeMb: 30, maxBackups: 2, compress: true });
  assert.deepEqual(c.static?.allowList, [{ verdict: ['DROPPED', 'ERROR'] }, { source_pod: ['kube-system/kube-dns'] }]);
  assert.deepEqual(c.static?.denyList, [{ source_pod: ['kube-system/'] }]);
  assert.deepEqual(c.static?.fieldMask, ['time', 'source.namespace', 'verdict']);
  assert.equal(c.static?.keys.allowList, 'hubble.export.static.allowList');
});

test('Cilium\'s agent flags, as a cilium-config ConfigMap writes them (space- or comma-separated JSON)', () => {
  // The values of Cilium's Helm test for the static exporter (cilium-config data).
  const c = load(`hubble-export-file-path: /var/log/cilium/hubble/flow.log
hubble-export-file-max-size-mb: "30"
hubble-export-file-max-backups: "3"
hubble-export-allowlist: '{"verdict":["DROPPED","ERROR"]} {"source_pod":["kube-system/kube-dns"]}'
hubble-export-denylist: '{"source_pod":["kube-system/"]},{"destination_pod":["kube-system/"],"destination_port":["53"],"verdict":["FORWARDED"]}'
hubble-export-fieldmask: time node_name verdict source.namespace
`);
  assert.deepEqual(c.static?.file, { path: '/var/log/cilium/hubble/flow.log', maxSizeMb: 30, maxBackups: 3, compress: false });
  assert.equal(c.static?.allowList.length, 2);
  assert.deepEqual(c.static?.denyList[1], { destination_pod: ['kube-system/'], destination_port: ['53'], verdict: ['FORWARDED'] });
  assert.deepEqual(c.static?.fieldMask, ['time', 'node_name', 'verdict', 'source.namespace']);
  assert.equal(c.static?.keys.denyList, 'hubble-export-denylist');
  // The Helm-shaped key wins over the flag.
  const both = load('hubble-export-file-max-size-mb: 30\nhubble:\n  export:\n    static:\n      fileMaxSizeMb: 7\n      filePath: /x.log\nhubble-export-file-path: /y.log\n');
  assert.deepEqual(both.static?.file, { path: '/x.log', maxSizeMb: 7, maxBackups: 5, compress: false });
});

test('the dynamic exporters: hubble.export.dynamic.enabled or hubble-flowlogs-config-path', () => {
  assert.equal(load('hubble:\n  export:\n    dynamic:\n      enabled: true\n').dynamic?.configFilePath, '/flowlog-config/flowlogs.yaml');
  assert.equal(load('hubble-flowlogs-config-path: /etc/cilium/flowlog.yaml\n').dynamic?.configFilePath, '/etc/cilium/flowlog.yaml');
});

test('flowLogs: ACNS\'s path on Linux, ours on Windows, aggregation off until enabled', () => {
  assert.deepEqual(load('flowLogs:\n  enabled: true\n').cnl, { file: { path: ACNS_LINUX_PATH, maxSizeMb: 10, maxBackups: 5, compress: false }, aggregation: undefined });
  assert.equal(load('flowLogs:\n  enabled: true\n', 'windows').cnl?.file.path, WINDOWS_FLOW_LOG_PATH);
  assert.deepEqual(load('flowLogs:\n  enabled: true\n  aggregation:\n    enabled: true\n    interval: 1m\n').cnl?.aggregation, { intervalMs: 60_000, maxKeys: 16_384 });
});

test('bad values name the key', () => {
  assert.throws(() => load('hubble:\n  export:\n    static:\n      allowList: [42]\n'), (e: unknown) => e instanceof ConfigErrors && /hubble\.export\.static\.allowList/.test(e.message) && /item 0/.test(e.message));
  assert.throws(() => load('hubble-export-allowlist: \'{"verdict": [\'\n'), (e: unknown) => e instanceof ConfigErrors && /hubble-export-allowlist/.test(e.message));
  assert.throws(() => load('hubble:\n  export:\n    static:\n      fieldMask: ["a b!"]\n'), (e: unknown) => e instanceof ConfigErrors && /fieldMask/.test(e.message));
  assert.throws(() => load('flowLogs:\n  aggregation:\n    interval: 10ms\n'), (e: unknown) => e instanceof ConfigErrors && /flowLogs\.aggregation\.interval/.test(e.message));
});

test('splitJsonObjects: braces inside strings, arrays, separators', () => {
  assert.deepEqual(splitJsonObjects('{"a":"}{"} , {"b":[1]}'), [{ a: '}{' }, { b: [1] }]);
  assert.deepEqual(splitJsonObjects('[{"a":1},{"b":2}]'), [{ a: 1 }, { b: 2 }]);
  assert.deepEqual(splitJsonObjects(''), []);
});
