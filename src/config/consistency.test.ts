import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentConfig, agentKeys, closestMatch, collectSpecs, configWarnings, loadValues } from './index.js';

const keys = agentKeys({ os: 'linux', names: ['linuxutil', 'dropreason', 'dns', 'packetparser'], defaults: ['linuxutil', 'dns'] });
const specs = collectSpecs(keys);
const load = (fileText: string, env: Record<string, string> = {}) => loadValues({ fileText, env, specs });
const warnings = (fileText: string, env: Record<string, string> = {}) => {
  const values = load(fileText, env);
  return configWarnings({ agent: agentConfig(keys, values), keys, values, podLevelOnlyPlugins: ['packetparser'] });
};

describe('unknown keys: "did you mean" the closest known key', () => {
  it('file keys, case-insensitive edit distance', () => {
    const v = load('enablePodLevl: true\nenabledPlugins: [dns]\napiserver:\n  prot: 1\nlogLevel: info\ntotallyUnrelatedKey: 1\n');
    assert.deepEqual(v.unknownKeys.map((u) => [u.key, u.source, u.didYouMean]), [
      ['enablePodLevl', 'file', 'enablePodLevel'],
      ['enabledPlugins', 'file', 'enabledPlugin'],
      ['apiserver.prot', 'file', 'apiServer.port'],
      ['totallyUnrelatedKey', 'file', undefined],
    ]);
  });
  it('Retina matches keys case-insensitively (viper), so enablePodlevel is the known key, not a typo', () => {
    const v = load('enablePodlevel: true\n');
    assert.deepEqual(v.unknownKeys, []);
    assert.equal(agentConfig(keys, v).enablePodLevel, true);
  });
  it('RETINA_ environment variables, named by the key they were probably meant for', () => {
    const v = load('', { RETINA_ENABLEPODLEVL: 'true', RETINA_LOGLEVEL: 'info', RETINA_APISERVER_PORTT: '1', PATH: '/bin' });
    assert.deepEqual(v.unknownKeys.map((u) => [u.key, u.source, u.didYouMean]), [
      ['RETINA_APISERVER_PORTT', 'env', 'apiServer.port'],
      ['RETINA_ENABLEPODLEVL', 'env', 'enablePodLevel'],
    ]);
  });
  it('closestMatch prefers a key that starts with the word, and gives up when nothing is close', () => {
    assert.equal(closestMatch('pod', ['ip', 'port', 'podname']), 'podname');
    assert.equal(closestMatch('xyz', ['ip', 'port', 'podname']), undefined);
    assert.equal(closestMatch('forward_cout', ['forward_count', 'forward_bytes']), 'forward_count');
  });
});

describe('contradictory keys are reported at start, naming the keys', () => {
  it('a config that is consistent, or spells out every default, has nothing to report', () => {
    assert.deepEqual(warnings(''), []);
    assert.deepEqual(warnings('enablePodLevel: false\nremoteContext: false\nenableAnnotations: false\ndataAggregationLevel: low\ndataSamplingRate: 1\n'), []);
    assert.deepEqual(warnings('enablePodLevel: true\nenabledPlugin: [packetparser, dns]\nremoteContext: true\ndataAggregationLevel: high\nenableConntrackMetrics: true\n'), []);
  });
  it('pipelineWorkers without packetparser at pod level has no effect, named with the reason', () => {
    assert.deepEqual(warnings('enablePodLevel: true\nenabledPlugin: [packetparser]\npipelineWorkers: 2\n'), []);
    assert.deepEqual(warnings('enablePodLevel: true\nenabledPlugin: [packetparser]\npipelineWorkers: auto\n'), []);
    const off = warnings('enabledPlugin: [dns]\npipelineWorkers: 2\n');
    assert.deepEqual(off.map((x) => x.keys), [['pipelineWorkers', 'enablePodLevel']]);
    assert.match(off[0]?.problem ?? '', /^pipelineWorkers: 2 has no effect: workers count packetparser's records at pod level, and enablePodLevel is false$/);
    const noPp = warnings('enablePodLevel: true\nenabledPlugin: [dns]\npipelineWorkers: auto\n');
    assert.deepEqual(noPp.map((x) => x.keys), [['pipelineWorkers', 'enabledPlugin']]);
    assert.match(noPp[0]?.problem ?? '', /packetparser is not in enabledPlugin/);
  });
  it('packetparser without enablePodLevel', () => {
    const w = warnings('enabledPlugin: [packetparser, dns]\n');
    assert.deepEqual(w.map((x) => x.keys), [['enabledPlugin', 'enablePodLevel']]);
    assert.match(w[0]?.problem ?? '', /packetparser is in enabledPlugin but nothing wants flows \(enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters \(flowLogs.enabled, hubble.export.static.enabled, hubble.export.dynamic.enabled\) are all off\)/);
  });
  it('pod-level keys without enablePodLevel', () => {
    const w = warnings('enableAnnotations: true\nremoteContext: true\nbypassLookupIPOfInterest: true\n');
    assert.deepEqual(w.map((x) => x.keys), [['enableAnnotations', 'enablePodLevel'], ['bypassLookupIPOfInterest', 'enablePodLevel'], ['remoteContext', 'enablePodLevel']]);
    assert.match(w[0]?.problem ?? '', /enableAnnotations: true has no effect while enablePodLevel is false/);
    assert.match(w[2]?.problem ?? '', /remoteContext: true has no effect while nothing wants flows: enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters/);
  });
  it('with hubble.enabled, packetparser and the flow keys work without enablePodLevel', () => {
    const w = warnings('hubble:\n  enabled: true\nenabledPlugin: [packetparser]\nremoteContext: true\nenableAnnotations: true\n');
    assert.deepEqual(w.map((x) => x.keys), [['enableAnnotations', 'enablePodLevel']]);
  });
  it('with a flow-log exporter (flowLogs.enabled, hubble.export.static), packetparser and the flow keys work without enablePodLevel', () => {
    for (const c of ['flowLogs:\n  enabled: true\n', 'hubble:\n  export:\n    static:\n      enabled: true\n']) {
      const w = warnings(`${c}enabledPlugin: [packetparser]\nremoteContext: true\ndataAggregationLevel: high\n`);
      assert.deepEqual(w, [], c);
    }
  });
  it('hubble.history.fromExport without hubble.enabled: named (nothing reads the history)', () => {
    const w = warnings('hubble:\n  history:\n    fromExport: true\n  export:\n    static:\n      enabled: true\n');
    assert.deepEqual(w.map((x) => x.keys), [['hubble.history.fromExport', 'hubble.enabled']]);
    assert.deepEqual(warnings('hubble:\n  enabled: true\n  history:\n    fromExport: true\n  export:\n    static:\n      enabled: true\n'), []);
  });
  it('packetparser listed while nothing wants flows: its keys are named with the reason', () => {
    const w = warnings('enabledPlugin: [packetparser]\ndataAggregationLevel: high\n');
    assert.deepEqual(w.map((x) => x.keys), [['enabledPlugin', 'enablePodLevel'], ['dataAggregationLevel', 'enabledPlugin']]);
    assert.match(w[1]?.problem ?? '', /only packetparser reads it, and nothing wants flows \(enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters/);
  });
  it('packetparser keys while packetparser does not run; both metrics intervals', () => {
    const w = warnings('enablePodLevel: true\ndataAggregationLevel: high\nenableConntrackMetrics: true\nmetricsInterval: 5\nmetricsIntervalDuration: 10s\n');
    assert.deepEqual(w.map((x) => x.keys), [['dataAggregationLevel', 'enabledPlugin'], ['enableConntrackMetrics', 'enabledPlugin'], ['metricsInterval', 'metricsIntervalDuration']]);
    assert.match(w[0]?.problem ?? '', /only packetparser reads it, and packetparser is not in enabledPlugin/);
  });
});
