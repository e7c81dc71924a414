/**
 * Stored flow logs under Windows (Wine + node.exe): ContainerNetworkLogs applied on the test control
 * plane (the real kube-apiserver of hack/k8s/harness.sh; wine.test.ts starts it and hands the
 * kubeconfig over in RETINATS_WINE_KUBECONFIG) are read by the Windows build of the agent's code
 * through a real informer, and select which of the Windows pod-flow path's flows — the pktmon plugin
 * over the events of a real PktMon capture (Windows Server 2022, test/fixtures/windows/real) — the
 * exporter writes to a JSON-lines file on a Windows path. No traffic can be made under Wine: the
 * recorded capture is the traffic, and each flow the plugin emitted is the count the file is judged by.
 * The same records go over OTLP/gRPC and OTLP/HTTP-protobuf (two sinks, told apart by the
 * service.version they send) from the Windows node under Wine to a real OpenTelemetry Collector,
 * a Linux process on loopback that wine.test.ts starts (RETINATS_WINE_OTLP): its file exporter,
 * read through Z:, must hold exactly the file's lines, in order, once per transport.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { arrived, waitArrived } from '../../export/otelcol.js';
import { createOtlpFlowSink } from '../../../src/export/otlp/index.js';
import { createContainerNetworkLogSelection, createFileSink, createFlowExporter, sinkCounts, type ContainerNetworkLogSelection, type FlowExporter } from '../../../src/export/index.js';
import { fanOut, type Flow, type FlowBatch } from '../../../src/flow/index.js';
import { loadFlowProtos } from '../../../src/flow/hubble/index.js';
import { collectionPath, createInformerFactory, createRestClient, loadRestConfig, objectPath, resources, type InformerFactory, type RestClient } from '../../../src/k8s/index.js';
import { createLogger } from '../../../src/log/index.js';
import { createMetricsRegistry } from '../../../src/metrics/index.js';
import { installCrds } from '../../../src/operator/index.js';
import { createPktmonPlugin } from '../../../src/plugins/windows/pktmon/index.js';
import { capture, memorySource } from './replay.js';
import { pluginContext, until } from './context.js';
import { env } from './wine.js';

const CNL = resources.containerNetworkLogs;

describe('flow logs under Windows: ContainerNetworkLogs on the real API server select the pktmon flows written to the file', () => {
  const log = createLogger({ level: 'error', component: 'test' });
  const dir = mkdtempSync(join(tmpdir(), 'flowlogs-'));
  const path = join(dir, 'events.log');
  const src = memorySource();
  const seen: Flow[] = [];
  const metrics = createMetricsRegistry({ processMetrics: false });
  const id = `wine-${process.pid}`;
  let client: RestClient;
  let factory: InformerFactory;
  let selection: ContainerNetworkLogSelection;
  let exporter: FlowExporter;
  let stop: () => Promise<void>;

  const otlp = JSON.parse(env('RETINATS_WINE_OTLP')) as { grpc: number; http: number; out: string };
  const rawLines = (): string[] => {
    let text = '';
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      return [];
    }
    return text.split('\n').filter((l) => l !== '');
  };
  const lines = (): Record<string, any>[] => rawLines().map((l) => JSON.parse(l) as Record<string, unknown>); // eslint-disable-line @typescript-eslint/no-explicit-any
  const written = async (sink = 'file'): Promise<number> => {
    const text = (await metrics.expose()).body;
    let sum = 0;
    for (const m of text.matchAll(new RegExp(`^controlplane_networkobservability_flow_log_records_total\\{sink="${sink}",result="written"[^}]*\\} (\\S+)$`, 'gm'))) sum += Number(m[1]);
    return sum;
  };
  const dropped = async (): Promise<string[]> =>
    (await metrics.expose()).body.split('\n').filter((l) => l.startsWith('controlplane_networkobservability_flow_log_records_total{') && l.includes('result="dropped"') && !l.endsWith(' 0'));
  /** The collector holds exactly the file's lines, in order, once over gRPC and once over HTTP/protobuf. */
  const assertCollector = async (): Promise<number> => {
    const file = rawLines();
    await waitArrived(otlp.out, 2 * file.length);
    const got = arrived(otlp.out);
    const over = (version: string): string[] => got.filter((r) => r.resource['service.version'] === version).map((r) => r.body as string);
    assert.equal(got.length, 2 * file.length, `the collector has ${got.length} records for ${file.length} lines`);
    assert.deepEqual(over('wine-grpc'), file, 'over gRPC: exactly the file\'s lines, in order');
    assert.deepEqual(over('wine-http'), file, 'over HTTP/protobuf: exactly the file\'s lines, in order');
    assert.equal(await written('otlp'), 2 * file.length);
    assert.deepEqual(await dropped(), []);
    return file.length;
  };
  /** Pushes a capture through the plugin; resolves with the flows it emitted (once none came for 500 ms). */
  const replay = async (file: string): Promise<Flow[]> => {
    const from = seen.length;
    src.push(capture(file));
    await until(`flows of ${file}`, () => (seen.length > from ? true : undefined));
    let last = -1;
    while (last !== seen.length) {
      last = seen.length;
      await new Promise((r) => setTimeout(r, 500));
    }
    return seen.slice(from);
  };
  const apply = (name: string, spec: unknown): Promise<unknown> =>
    client.request('POST', collectionPath(CNL), { body: { apiVersion: 'acn.azure.com/v1alpha1', kind: 'ContainerNetworkLog', metadata: { name }, spec } });

  before(async () => {
    client = createRestClient(await loadRestConfig({ kubeconfig: env('RETINATS_WINE_KUBECONFIG'), env: {} }));
    await installCrds({ client, dir: fileURLToPath(new URL('../../../../charts/retina/crds', import.meta.url)), log, only: ['ContainerNetworkLog'] });
    factory = createInformerFactory({ client, log });
    const protos = loadFlowProtos(fileURLToPath(new URL('../../../../proto/hubble', import.meta.url)));
    selection = createContainerNetworkLogSelection({ log, enums: protos.enums });
    exporter = createFlowExporter({
      name: 'containernetworklog', selection, nodeName: 'akswin000000', protos, metrics, log,
      sinks: [
        createFileSink({ path, maxSizeBytes: 10 << 20, maxBackups: 5, compress: false, counts: sinkCounts(metrics, 'file'), log }),
        ...([['grpc', otlp.grpc], ['http/protobuf', otlp.http]] as const).map(([protocol, port]) => createOtlpFlowSink({
          config: {
            endpoint: `http://127.0.0.1:${port}`, protocol, headers: {}, timeoutMs: 10_000, queueSize: 10_000, batchSize: 64, flushIntervalMs: 50, compression: 'none',
            tls: { caFile: '', certFile: '', keyFile: '', serverName: '', insecureSkipVerify: false },
          },
          nodeName: 'akswin000000', version: protocol === 'grpc' ? 'wine-grpc' : 'wine-http',
          protoDir: fileURLToPath(new URL('../../../../proto', import.meta.url)), metrics, log,
        })),
      ],
    });
    const tap = { consume: (b: FlowBatch) => { seen.push(...b.flows); } };
    const def = createPktmonPlugin(() => src);
    const { ctx, abort } = pluginContext(def);
    const handle = await def.start({ ...ctx, flows: fanOut([tap, exporter]) });
    stop = async () => { abort.abort(); await handle[Symbol.asyncDispose](); };
    selection.watch(factory);
    await until('ContainerNetworkLogs listed', () => (factory.stats().every((s) => s.synced) ? true : undefined));
  });

  after(async () => {
    await stop?.();
    await exporter?.[Symbol.asyncDispose]();
    selection?.[Symbol.dispose]();
    await factory?.[Symbol.asyncDispose]();
    for (const n of ['udp', 'drops', 'bad']) await client?.request('DELETE', objectPath(CNL, undefined, `${id}-${n}`)).catch(() => undefined);
    client?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('without a ContainerNetworkLog nothing is written', async () => {
    assert.equal(selection.current().active, false);
    const flows = await replay('pktmon-20348-server2022.etl');
    assert.equal(flows.length, 38);
    assert.deepEqual(lines(), []);
    await new Promise((r) => setTimeout(r, 300)); // past the OTLP flush interval
    assert.deepEqual(arrived(otlp.out), [], 'nothing sent to the collector either');
  });

  it('one ContainerNetworkLog writes exactly its flows; a second adds its own (a union); an invalid one is skipped; none writes nothing', async (t) => {
    const v4udp = (f: Flow): boolean => f.ipVersion === 4 && f.proto === 17;
    await apply(`${id}-udp`, { includefilters: [{ from: { ip: ['0.0.0.0/0'] }, protocol: ['udp'] }] });
    await apply(`${id}-bad`, { includefilters: [{ to: { ip: ['10.0.0.300'] } }] });
    await until('the first selected', () => (selection.current().active && selection.resources().length === 2 ? true : undefined));
    assert.deepEqual(selection.resources().map((r) => [r.name, r.ok]), [[`${id}-bad`, false], [`${id}-udp`, true]], 'bad skipped, udp in force');
    const wifi = await replay('pktmon-19042-wifi.etl');
    const want = wifi.filter(v4udp);
    assert.ok(want.length > 0 && want.length < wifi.length, `the filter splits the capture: ${want.length} of ${wifi.length}`);
    await until(`${want.length} written`, async () => ((await written()) >= want.length ? true : undefined));
    const got = lines();
    assert.equal(got.length, want.length);
    assert.equal(await assertCollector(), want.length);
    for (const l of got) {
      assert.equal(l['flow']['IP']['ipVersion'], 'IPv4');
      assert.ok(l['flow']['l4']['UDP'], JSON.stringify(l));
      assert.equal(l['node_name'], 'akswin000000');
    }

    // A second resource: dropped flows, any protocol; the capture with drops.
    await apply(`${id}-drops`, { includefilters: [{ verdict: ['dropped'] }] });
    await until('both selected', () => (selection.current().allow.length === 2 ? true : undefined));
    const drops = await replay('pktmon-26200-drops.etl');
    const union = drops.filter((f) => v4udp(f) || f.verdict === 'DROPPED');
    assert.ok(drops.some((f) => f.verdict === 'DROPPED'), 'the drops capture has drops');
    await until(`${got.length + union.length} written`, async () => ((await written()) >= got.length + union.length ? true : undefined));
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(lines().length, got.length + union.length, `the union of both: ${union.length} of ${drops.length}`);
    assert.equal(await assertCollector(), got.length + union.length);
    assert.equal(lines().slice(got.length).filter((l) => l['flow']['verdict'] === 'DROPPED').length, drops.filter((f) => f.verdict === 'DROPPED').length);

    for (const n of ['udp', 'drops', 'bad']) await client.request('DELETE', objectPath(CNL, undefined, `${id}-${n}`));
    await until('nothing selected', () => (selection.current().active ? undefined : true));
    const total = lines().length;
    const more = await replay('pktmon-19042-wifi-2.etl');
    assert.ok(more.length > 0);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(lines().length, total, 'no valid ContainerNetworkLog: nothing more written');
    assert.equal(await assertCollector(), total, 'nor sent');
    t.diagnostic(`flow logs under Wine: ${want.length} of ${wifi.length} flows written (IPv4 UDP), then ${union.length} of ${drops.length} (the union with drops), then 0 of ${more.length}; the same ${total} records at the collector over gRPC and over HTTP/protobuf`);
  });
});
