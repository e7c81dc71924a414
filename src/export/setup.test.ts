/**
 * startFlowLogs wires every exporter the config asks for: the ContainerNetworkLog exporter reads its
 * resources through the informer factory handed in (one subscription, released on disposal) and
 * writes what they select; without a factory it is left out, said once, and the others run; an OTLP
 * TLS file that cannot be read stops the start before anything watches.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { testAgentConfig } from '../../test/ebpf/fake-context.js';
import { FakeInformer } from '../../test/fakes/informer.js';
import { captureLog } from '../../test/fakes/log.js';
import type { ExportFileConfig, FlowLogsConfig } from '../config/index.js';
import { createFlow } from '../flow/index.js';
import { FLOW_PROTO_FILES, hubbleProtoFiles } from '../flow/hubble/index.js';
import type { InformerFactory, ReflectorHandler } from '../k8s/index.js';
import { createMetricsRegistry } from '../metrics/index.js';
import { startFlowLogs, type FlowLogsOptions } from './setup.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const protoFiles = hubbleProtoFiles(join(ROOT, 'proto/hubble'), FLOW_PROTO_FILES);
const dir = mkdtempSync(join(tmpdir(), 'flow-log-setup-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string): ExportFileConfig => ({ path: join(dir, name), maxSizeMb: 10, maxBackups: 1, compress: false });

function options(config: Partial<FlowLogsConfig>, informers: InformerFactory | undefined, over: Partial<FlowLogsOptions> = {}): FlowLogsOptions & { log: ReturnType<typeof captureLog> } {
  const agent = testAgentConfig();
  return {
    config: { ...agent.flowLogs, static: undefined, dynamic: undefined, cnl: undefined, ...config }, otlp: agent.flowLogsOtlp,
    nodeName: 'node-a', version: '0.0.0', protoFiles, protoDir: join(ROOT, 'proto'), informers,
    metrics: createMetricsRegistry({ processMetrics: false }), log: captureLog(), ...over,
  } as FlowLogsOptions & { log: ReturnType<typeof captureLog> };
}

/** A factory whose one informer (the ContainerNetworkLogs) is a FakeInformer. */
function fakeFactory(): { factory: InformerFactory; informer: FakeInformer<unknown> } {
  const informer = new FakeInformer<unknown>();
  const factory = { informer: () => informer, start: () => undefined, stats: () => [], [Symbol.asyncDispose]: async () => undefined };
  return { factory: factory as unknown as InformerFactory, informer };
}

const batch = { source: 'test', flows: [createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.2', verdict: 'DROPPED' }), createFlow({ srcIp: '10.0.0.1', dstIp: '10.0.0.3', verdict: 'FORWARDED' })] };

describe('startFlowLogs', () => {
  it('flowLogs.enabled: the ContainerNetworkLog selection watches through the factory handed in; disposal stops it and writes out the file', async () => {
    const f = fakeFactory();
    const path = join(dir, 'cnl.log');
    const logs = await startFlowLogs(options({ cnl: { file: file('cnl.log'), aggregation: undefined } }, f.factory));
    assert.deepEqual(logs.consumers.map((c) => c.name), ['flow_log_containernetworklog']);
    assert.equal(f.informer.handlers.size, 1, 'one subscription to the ContainerNetworkLogs');
    f.informer.set('drops', { name: 'drops', generation: 1, spec: { includefilters: [{ verdict: ['dropped'] }] } });
    f.informer.handlers.forEach((h: ReflectorHandler<unknown>) => h.synced?.());
    for (const c of logs.consumers) c.consumer.consume(batch);
    await logs[Symbol.asyncDispose]();
    assert.equal(f.informer.handlers.size, 0, 'disposal ends the subscription');
    const lines = readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { flow: { verdict: string } });
    assert.deepEqual(lines.map((l) => l.flow.verdict), ['DROPPED'], 'exactly the selected flow');
  });

  it('without Kubernetes: no ContainerNetworkLog exporter (said once); hubble.export.static still runs', async () => {
    const o = options({
      cnl: { file: file('none.log'), aggregation: undefined },
      static: { file: file('static.log'), allowList: [], denyList: [], fieldMask: [], aggregationIntervalMs: 0, keys: { allowList: 'a', denyList: 'd', fieldMask: 'm' } },
    }, undefined);
    await using logs = await startFlowLogs(o);
    assert.deepEqual(logs.consumers.map((c) => c.name), ['flow_log_static']);
    assert.equal(o.log.lines.filter((l) => l.level === 'error' && /no ContainerNetworkLog selection/.test(l.msg)).length, 1);
  });

  it('an OTLP TLS file that cannot be read stops the start, before anything watches', async () => {
    const f = fakeFactory();
    const agent = testAgentConfig();
    const otlp = { ...agent.flowLogsOtlp, endpoint: 'https://127.0.0.1:1', protocol: 'http/protobuf' as const, tls: { ...agent.flowLogsOtlp.tls, caFile: join(dir, 'missing-ca.pem') } };
    await assert.rejects(startFlowLogs(options({ cnl: { file: file('otlp.log'), aggregation: undefined } }, f.factory, { otlp })), /missing-ca\.pem/);
    assert.equal(f.informer.handlers.size, 0);
  });
});
