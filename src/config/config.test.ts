import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigErrors, agentConfig, agentKeys, collectSpecs, envName, intKey, loadValues, parseDurationMs, stringKey } from './index.js';

const keys = agentKeys({ os: 'linux', names: ['linuxutil', 'dropreason', 'dns'], defaults: ['linuxutil', 'dns'] });
const specs = collectSpecs(keys);

function load(fileText?: string, env: Record<string, string> = {}) {
  const values = loadValues({ fileText, env, specs });
  return agentConfig(keys, values);
}

function errorOf(fileText?: string, env: Record<string, string> = {}): ConfigErrors {
  try {
    load(fileText, env);
  } catch (e) {
    if (e instanceof ConfigErrors) return e;
    throw e;
  }
  throw new Error('expected a configuration error');
}

describe('agent configuration', () => {
  it('no file means the defaults', () => {
    const c = load();
    assert.equal(c.apiServerHost, '0.0.0.0');
    assert.equal(c.apiServerPort, 10093);
    assert.equal(c.logLevel, 'info');
    assert.deepEqual(c.enabledPlugin, ['linuxutil', 'dns']);
    assert.equal(c.metricsIntervalMs, 10_000);
    assert.equal(c.enablePodLevel, false);
    assert.equal(c.dataAggregationLevel, 'low');
    assert.equal(c.dataSamplingRate, 1);
    assert.equal(c.conntrackReportIntervalMs, 30_000);
    assert.equal(c.packetParserRingBufferSize, 8_388_608);
    assert.equal(c.filterMapMaxEntries, 255);
    assert.ok(Object.isFrozen(c));
  });

  it('a key written without a value is unset, as Retina reads it (its Hubble chart renders `enableConntrackMetrics:`)', () => {
    const c = load('enableConntrackMetrics:\nconntrackReportInterval:\nenablePodLevel: true\n');
    assert.equal(c.enableConntrackMetrics, false);
    assert.equal(c.conntrackReportIntervalMs, 30_000);
    assert.equal(c.enablePodLevel, true);
  });

  it('reads Retina-style YAML, nested keys included', () => {
    const c = load(`
apiServer:
  host: 127.0.0.1
  port: 9000
logLevel: debug
enabledPlugin: [dropreason, linuxutil]
metricsIntervalDuration: 1m30s
enablePodLevel: true
dataAggregationLevel: high
`);
    assert.equal(c.apiServerHost, '127.0.0.1');
    assert.equal(c.apiServerPort, 9000);
    assert.equal(c.logLevel, 'debug');
    assert.deepEqual(c.enabledPlugin, ['dropreason', 'linuxutil']);
    assert.equal(c.metricsIntervalMs, 90_000);
    assert.equal(c.enablePodLevel, true);
    assert.equal(c.dataAggregationLevel, 'high');
  });

  it('environment overrides win over the file', () => {
    const c = load('logLevel: debug\napiServer:\n  port: 9000\nenabledPlugin: [dns]\n', {
      RETINA_LOGLEVEL: 'warn',
      RETINA_APISERVER_PORT: '9100',
      RETINA_ENABLEDPLUGIN: 'linuxutil,dropreason',
      RETINA_ENABLEPODLEVEL: 'TRUE',
    });
    assert.equal(c.logLevel, 'warn');
    assert.equal(c.apiServerPort, 9100);
    assert.deepEqual(c.enabledPlugin, ['linuxutil', 'dropreason']);
    assert.equal(c.enablePodLevel, true);
  });

  it('names env variables RETINA_<KEY> with dots as underscores', () => {
    assert.equal(envName('apiServer.port'), 'RETINA_APISERVER_PORT');
    assert.equal(envName('enabledPlugin'), 'RETINA_ENABLEDPLUGIN');
  });

  it('accepts the list forms users write', () => {
    assert.deepEqual(load(undefined, { RETINA_ENABLEDPLUGIN: '[dns, "linuxutil"]' }).enabledPlugin, ['dns', 'linuxutil']);
    assert.deepEqual(load('enabledPlugin: "dns,linuxutil,dns"').enabledPlugin, ['dns', 'linuxutil']);
    assert.deepEqual(load('enabledPlugin: []').enabledPlugin, []);
  });

  it('uses the deprecated metricsInterval (seconds) only when metricsIntervalDuration is unset', () => {
    assert.equal(load('metricsInterval: 5').metricsIntervalMs, 5000);
    assert.equal(load('metricsInterval: 5s').metricsIntervalMs, 5000);
    assert.equal(load('metricsInterval: 5\nmetricsIntervalDuration: 2s').metricsIntervalMs, 2000);
  });

  // One case per class of invalid value: each message names the key, the value and what is allowed.
  const invalid: [string, string | undefined, Record<string, string>, RegExp][] = [
    ['integer out of range', 'apiServer:\n  port: 99999', {}, /"apiServer\.port".*99999.*from 0 to 65535/],
    ['not an integer', undefined, { RETINA_APISERVER_PORT: 'abc' }, /"apiServer\.port".*"abc".*env RETINA_APISERVER_PORT.*an integer/],
    ['not a boolean', 'enablePodLevel: maybe', {}, /"enablePodLevel".*"maybe".*true or false/],
    ['not in the enum', 'logLevel: loud', {}, /"logLevel".*"loud".*one of debug, info, warn, error/],
    ['enum for aggregation', 'dataAggregationLevel: medium', {}, /"dataAggregationLevel".*one of low, high/],
    ['bad duration', 'metricsIntervalDuration: 10 parsecs', {}, /"metricsIntervalDuration".*"10 parsecs".*a duration/],
    ['duration too short', 'conntrackReportInterval: 10ms', {}, /"conntrackReportInterval".*at least 1s/],
    ['unknown plugin', 'enabledPlugin: [linuxutil, nope]', {}, /"enabledPlugin".*plugins available on linux: linuxutil, dropreason, dns \(unknown: nope\)/],
    ['not a power of two', 'packetParserRingBufferSize: 5000', {}, /"packetParserRingBufferSize".*a power of two/],
    ['empty string', 'apiServer:\n  host: ""', {}, /"apiServer\.host".*a non-empty string/],
    ['wrong shape', 'logLevel: [debug]', {}, /"logLevel"/],
    ['sampling rate zero', 'dataSamplingRate: 0', {}, /"dataSamplingRate".*from 1 to/],
    ['pipeline workers not a count', 'pipelineWorkers: many', {}, /"pipelineWorkers".*an integer from 0 to 64, or auto/],
    ['too many pipeline workers', 'pipelineWorkers: 65', {}, /"pipelineWorkers".*an integer from 0 to 64, or auto/],
    ['pipeline workers from the environment', '', { RETINA_PIPELINEWORKERS: '-1' }, /"pipelineWorkers".*RETINA_PIPELINEWORKERS/],
  ];
  for (const [name, file, env, re] of invalid) {
    it(`rejects ${name}`, () => {
      const e = errorOf(file, env);
      assert.equal(e.errors.length, 1, e.message);
      assert.match(e.message, re);
    });
  }

  it('reports every bad key at once', () => {
    const e = errorOf('logLevel: loud\napiServer:\n  port: -1\nenablePodLevel: 3');
    assert.deepEqual(e.errors.map((x) => x.key).sort(), ['apiServer.port', 'enablePodLevel', 'logLevel']);
  });

  it('rejects a file that is not a YAML mapping, naming the problem', () => {
    assert.match(errorOf('- a\n- b').message, /a YAML mapping/);
    assert.match(errorOf('logLevel: [unclosed').message, /valid YAML/);
  });

  it('lists keys nobody declares instead of failing on them', () => {
    const v = loadValues({ fileText: 'enableTelemetry: true\nlogLevel: info\napiServer:\n  port: 1\n', env: {}, specs });
    assert.deepEqual(v.unknownKeys, [{ key: 'enableTelemetry', source: 'file', didYouMean: undefined, value: true }]);
  });

  it('metricsTLS and metricsAuth: off by default; both files or none, the missing one named; auth and its cache from file or env', () => {
    assert.deepEqual(load().metricsSecurity, { tls: undefined, auth: { enabled: false, allowedTtlMs: 60_000, deniedTtlMs: 10_000, cacheSize: 1024 } });
    const c = load('metricsTLS:\n  certFile: /t/tls.crt\n  keyFile: /t/tls.key\nmetricsAuth:\n  enabled: true\n  deniedCacheTTL: 2s\n', { RETINA_METRICSAUTH_CACHESIZE: '7' });
    assert.deepEqual(c.metricsSecurity, { tls: { certFile: '/t/tls.crt', keyFile: '/t/tls.key' }, auth: { enabled: true, allowedTtlMs: 60_000, deniedTtlMs: 2000, cacheSize: 7 } });
    const onlyCert = errorOf('metricsTLS:\n  certFile: /t/tls.crt\n');
    assert.deepEqual(onlyCert.errors.map((e) => e.key), ['metricsTLS.keyFile']);
    assert.match(onlyCert.message, /metricsTLS\.certFile is set, and TLS needs both/);
    assert.deepEqual(errorOf(undefined, { RETINA_METRICSTLS_KEYFILE: '/k' }).errors.map((e) => [e.key, e.source]), [['metricsTLS.certFile', 'default']]);
    assert.deepEqual(errorOf('metricsAuth:\n  enabled: maybe\n').errors.map((e) => e.key), ['metricsAuth.enabled']);
  });

  it('hubble: plaintext by default in cluster "default"; hubble.tls needs the certificate and the key, the missing ones named', () => {
    assert.deepEqual([load().hubble.tls, load().hubble.clusterName], [undefined, 'default']);
    const c = load('hubble:\n  clusterName: prod\n  tls:\n    enabled: true\n    certFile: /t/s.crt\n    keyFile: /t/s.key\n    clientCAFiles: [/t/ca1.crt, /t/ca2.crt]\n');
    assert.deepEqual([c.hubble.clusterName, c.hubble.tls], ['prod', { certFile: '/t/s.crt', keyFile: '/t/s.key', clientCAFiles: ['/t/ca1.crt', '/t/ca2.crt'] }]);
    // Files set without enabled: still plaintext.
    assert.equal(load('hubble:\n  tls:\n    certFile: /t/s.crt\n').hubble.tls, undefined);
    const e = errorOf('hubble:\n  tls:\n    enabled: true\n    keyFile: /t/s.key\n');
    assert.deepEqual(e.errors.map((x) => x.key), ['hubble.tls.certFile']);
    assert.match(e.message, /hubble\.tls\.enabled is true, and TLS needs both/);
    assert.deepEqual(errorOf('hubble:\n  tls:\n    enabled: true\n').errors.map((x) => x.key), ['hubble.tls.certFile', 'hubble.tls.keyFile']);
  });

  it('hubble.history.fromExport: off by default; needs the static exporter writing whole flows, each problem named', () => {
    assert.equal(load().hubble.historyFromExport, false);
    const ok = load('hubble:\n  history:\n    fromExport: true\n  export:\n    static:\n      enabled: true\n');
    assert.equal(ok.hubble.historyFromExport, true);
    assert.equal(load('hubble-export-file-path: /x/e.log\nhubble:\n  history:\n    fromExport: true\n').hubble.historyFromExport, true, 'Cilium\'s flag runs the static exporter too');
    const none = errorOf('hubble:\n  history:\n    fromExport: true\n');
    assert.deepEqual(none.errors.map((x) => x.key), ['hubble.history.fromExport']);
    assert.match(none.message, /hubble\.export\.static\.enabled: true .*the static exporter's files are the history/);
    const masked = errorOf('hubble:\n  history:\n    fromExport: true\n  export:\n    static:\n      enabled: true\n      fieldMask: [time, verdict]\n      aggregationInterval: 30s\n');
    assert.deepEqual(masked.errors.map((x) => x.key), ['hubble.export.static.fieldMask', 'hubble.export.static.aggregationInterval']);
    assert.match(masked.message, /read back as whole flows/);
    assert.deepEqual(errorOf('hubble-export-file-path: /x/e.log\nhubble-export-fieldmask: time\nhubble:\n  history:\n    fromExport: true\n').errors.map((x) => x.key), ['hubble-export-fieldmask'], 'the key the user set is named');
  });

  it('rejects a key declared twice by two components', () => {
    assert.throws(() => collectSpecs(keys, { other: stringKey('logLevel', 'x', 'dup') }), /declared twice/);
    assert.doesNotThrow(() => collectSpecs(keys, { mine: intKey('myPluginKey', 1, 'mine') }));
  });
});

describe('durations', () => {
  it('parses Go syntax', () => {
    assert.equal(parseDurationMs('10s'), 10_000);
    assert.equal(parseDurationMs('1h2m3.5s'), 3_723_500);
    assert.equal(parseDurationMs('500ms'), 500);
    assert.equal(parseDurationMs('0'), 0);
    assert.equal(parseDurationMs('10'), undefined);
    assert.equal(parseDurationMs('s'), undefined);
    assert.equal(parseDurationMs('10s x'), undefined);
  });
});
