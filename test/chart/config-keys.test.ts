/**
 * Every key the chart's ConfigMaps render is a key the agent (or the operator) knows: each profile's
 * config.yaml is loaded with the commands' own loader and key lists, which must report no unknown key
 * and no invalid value; the contradiction checks of the agent must be silent too.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { agentConfig, agentKeys, collectSpecs, configWarnings, loadValues, type ConfigSpec } from '../../src/config/index.js';
import { operatorKeys } from '../../src/operator/index.js';
import { loadPlugins } from '../../src/platform/index.js';
import type { OsName } from '../../src/plugin/index.js';
import { CHART, PROFILES, one, render } from './helm.js';

async function loadAgentConfig(os: OsName, text: string, env: Record<string, string> = {}) {
  const plugins = await loadPlugins(os);
  const keys = agentKeys({ os, names: plugins.map((p) => p.name), defaults: plugins.filter((p) => p.defaultEnabled).map((p) => p.name) });
  const values = loadValues({ fileText: text, filePath: `${os}/config.yaml`, env, specs: collectSpecs(keys, ...plugins.map((p) => p.config as ConfigSpec<object>)) });
  const agent = agentConfig(keys, values);
  const podLevelOnlyPlugins = plugins.filter((p) => p.podLevelOnly).map((p) => p.name);
  return { agent, unknown: values.unknownKeys.map((u) => u.key), warnings: configWarnings({ agent, keys, values, podLevelOnlyPlugins }).map((w) => w.problem) };
}

async function loadAgent(os: OsName, text: string): Promise<{ unknown: string[]; warnings: string[] }> {
  const { unknown, warnings } = await loadAgentConfig(os, text);
  return { unknown, warnings };
}

const data = (o: { [k: string]: unknown }, key: string): string => (o['data'] as Record<string, string>)[key] as string;

describe('chart: rendered config keys are the agent\'s and the operator\'s', { timeout: 600_000 }, () => {
  for (const p of PROFILES) {
    it(`${p}: agent and operator configs load with no unknown key, error or contradiction`, async () => {
      const { objects } = await render(p);
      const fullname = p === 'coexist' ? 'retina-ts' : 'retina'; // coexist names its objects apart from Retina's
      const linux = await loadAgent('linux', data(one(objects, 'ConfigMap', `${fullname}-agent-linux`), 'config.yaml'));
      assert.deepEqual(linux, { unknown: [], warnings: [] });
      if (p === 'windows') {
        const win = await loadAgent('windows', data(one(objects, 'ConfigMap', 'retina-agent-windows'), 'config.yaml'));
        assert.deepEqual(win, { unknown: [], warnings: [] });
      }
      const keys = operatorKeys();
      const op = loadValues({ fileText: data(one(objects, 'ConfigMap', `${fullname}-operator`), 'operator-config.yaml'), env: {}, specs: collectSpecs(keys as ConfigSpec<object>) });
      assert.deepEqual(op.unknownKeys.map((u) => u.key), []);
    });
  }

  it('every plugin key the schema offers renders and loads (the values schema and the agent agree)', async () => {
    const set = ['interfaceStatsExclude={lxc*}', 'packetForwardInterfaces={eth0}', 'packetForwardTcMode=clsact', 'dnsRingBufferSize=2097152', 'dropReasonRingBufferSize=262144',
      'packetParserHostInterfaces={eth0}', 'packetParserTcMode=tcx', 'packetParserConntrackMaxEntries=1024']
      .flatMap((s) => ['--set', `agent.linux.config.${s}`]);
    const { objects } = await render('advanced-local', [...set, '--set', 'config.pluginStartTimeout=5s', '--set', 'config.shutdownTimeout=5s']);
    const text = data(one(objects, 'ConfigMap', 'retina-agent-linux'), 'config.yaml');
    for (const k of ['interfaceStatsExclude', 'packetForwardTcMode', 'dnsRingBufferSize', 'dropReasonRingBufferSize', 'packetParserConntrackMaxEntries', 'pluginStartTimeout']) assert.match(text, new RegExp(`^${k}:`, 'm'));
    assert.deepEqual((await loadAgent('linux', text)).unknown, []);
  });

  it('values.schema.json offers exactly the agent\'s keys (shared + Linux) and the operator\'s', async () => {
    type Schema = { properties: Record<string, Schema & { type?: string }> };
    const schema = JSON.parse(readFileSync(`${CHART}/values.schema.json`, 'utf8')) as Schema;
    const flat = (s: Schema, prefix = ''): string[] => Object.entries(s.properties).flatMap(([k, v]) =>
      v.type === 'object' && v.properties ? flat(v, `${prefix}${k}.`) : [`${prefix}${k}`]);
    const offered = new Set([...flat(schema.properties['config'] as Schema), ...flat((schema.properties['agent'] as Schema).properties['linux']!.properties['config'] as Schema)]);
    const plugins = await loadPlugins('linux');
    const known = new Set([
      ...Object.values(agentKeys({ os: 'linux', names: [], defaults: [] })).map((k) => k.key),
      ...plugins.flatMap((p) => Object.values(p.config as Record<string, { key: string }>).map((k) => k.key)),
    ]);
    assert.deepEqual([...offered].filter((k) => !known.has(k)).sort(), [], 'schema keys the agent does not know');
    assert.deepEqual([...known].filter((k) => !offered.has(k)).sort(), [], 'agent keys the chart cannot set');
    const op = flat((schema.properties['operator'] as Schema).properties['config'] as Schema);
    const opKnown = Object.values(operatorKeys()).map((k) => k.key).filter((k) => k !== 'remoteContext');
    assert.deepEqual(op.filter((k) => !opKnown.includes(k)).sort(), []);
    assert.deepEqual(opKnown.filter((k) => !op.includes(k)).sort(), []);
  });

  it('hubble.enabled renders hubble keys both agents load with no unknown key or contradiction', async () => {
    const { objects } = await render('windows', ['--set', 'hubble.enabled=true', '--set', 'config.hubble.socketPath=/var/run/retina/hubble.sock']);
    const linux = data(one(objects, 'ConfigMap', 'retina-agent-linux'), 'config.yaml');
    assert.match(linux, /^hubble:\n {2}enabled: true\n {2}listenAddress: :4244\n {2}maxFlows: 4096\n {2}socketPath: \/var\/run\/retina\/hubble.sock$/m);
    assert.deepEqual(await loadAgent('linux', linux), { unknown: [], warnings: [] });
    assert.deepEqual(await loadAgent('windows', data(one(objects, 'ConfigMap', 'retina-agent-windows'), 'config.yaml')), { unknown: [], warnings: [] });
  });

  it('flowLogs.otlp renders keys both agents load, the headers coming from the env variable the DaemonSets set from the Secret', async () => {
    const { objects } = await render('windows', ['config.flowLogs.enabled=true', 'flowLogs.otlp.endpoint=https://otel.monitoring:4317', 'flowLogs.otlp.compression=gzip',
      'flowLogs.otlp.headers.secretName=otlp-auth', 'flowLogs.otlp.tls.secretName=otlp-certs', 'flowLogs.otlp.tls.clientCertificate=true'].flatMap((x) => ['--set', x]));
    for (const [os, name, dir] of [['linux', 'retina-agent-linux', '/retina/otlp-tls'], ['windows', 'retina-agent-windows', 'otlp-tls']] as const) {
      const env = ((one(objects, 'DaemonSet', name) as unknown as { spec: { template: { spec: { containers: { env: { name: string }[] }[] } } } }).spec.template.spec.containers[0]?.env ?? [])
        .filter((e) => e.name.startsWith('RETINA_'));
      assert.deepEqual(env.map((e) => e.name), ['RETINA_FLOWLOGS_OTLP_HEADERS'], name);
      // What the kubelet hands over from the Secret's key.
      const loaded = await loadAgentConfig(os, data(one(objects, 'ConfigMap', name), 'config.yaml'), { RETINA_FLOWLOGS_OTLP_HEADERS: 'authorization=Bearer%20t0ken,x-tenant=a' });
      assert.deepEqual({ unknown: loaded.unknown, warnings: loaded.warnings }, { unknown: [], warnings: [] }, name);
      const o = loaded.agent.flowLogsOtlp;
      assert.deepEqual({ endpoint: o.endpoint, protocol: o.protocol, compression: o.compression, headers: o.headers, caFile: o.tls.caFile, certFile: o.tls.certFile, keyFile: o.tls.keyFile },
        { endpoint: 'https://otel.monitoring:4317', protocol: 'grpc', compression: 'gzip', headers: { authorization: 'Bearer t0ken', 'x-tenant': 'a' },
          caFile: `${dir}/ca.crt`, certFile: `${dir}/tls.crt`, keyFile: `${dir}/tls.key` }, name);
    }
  });

  it('config.retinaEndpointSlices turns slices on in the Linux and Windows agents and in the operator; operator.config can still say otherwise', async () => {
    const read = async (set: string[]): Promise<{ linux: boolean; windows: boolean; operator: unknown }> => {
      const { objects } = await render('windows', ['--set', 'config.remoteContext=true', ...set]);
      const keys = operatorKeys();
      const op = loadValues({ fileText: data(one(objects, 'ConfigMap', 'retina-operator'), 'operator-config.yaml'), env: {}, specs: collectSpecs(keys as ConfigSpec<object>) });
      return {
        linux: (await loadAgentConfig('linux', data(one(objects, 'ConfigMap', 'retina-agent-linux'), 'config.yaml'))).agent.retinaEndpointSlices,
        windows: (await loadAgentConfig('windows', data(one(objects, 'ConfigMap', 'retina-agent-windows'), 'config.yaml'))).agent.retinaEndpointSlices,
        operator: op.get(keys.retinaEndpointSlices),
      };
    };
    assert.deepEqual(await read([]), { linux: false, windows: false, operator: false });
    assert.deepEqual(await read(['--set', 'config.retinaEndpointSlices=true']), { linux: true, windows: true, operator: true });
    assert.deepEqual(await read(['--set', 'config.retinaEndpointSlices=true', '--set', 'operator.config.retinaEndpointSlices=false']), { linux: true, windows: true, operator: false });
  });

  it('a key the agent does not know is caught here (the check can fail)', async () => {
    assert.deepEqual((await loadAgent('linux', 'enablePodLevl: true\n')).unknown, ['enablePodLevl']);
  });
});
