/**
 * Cilium's hubble_* metrics under Windows (Wine + node.exe): the agent's flow pipeline
 * (src/pipeline, the one the Linux agent runs) with the Hubble metrics as its consumer, fed by the
 * pktmon plugin over the events of a real PktMon capture (Windows Server 2022,
 * test/fixtures/windows/real), configured from RETINA_HUBBLE_METRICS_ENABLED in Cilium's syntax,
 * and served over HTTP on loopback as the agent serves hubble.metrics.listenAddress.
 */
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { agentConfig, agentKeys, collectSpecs, loadValues, podLabelName } from '../../../src/config/index.js';
import { silentLogger } from '../../../src/log/index.js';
import { createMetricsRegistry } from '../../../src/metrics/index.js';
import { createHubbleMetrics } from '../../../src/metrics/hubble/index.js';
import { startNodePipeline } from '../../../src/pipeline/index.js';
import { createPktmonPlugin } from '../../../src/plugins/windows/pktmon/index.js';
import { startHttpServer, type HttpServer } from '../../../src/server/index.js';
import { capture, memorySource } from './replay.js';
import { pluginContext, until } from './context.js';
import './wine.js';

const HOST = '127.0.45.8';

function scrape(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    get({ host: HOST, port, path: '/metrics' }, (r) => {
      let body = '';
      r.setEncoding('utf8');
      r.on('data', (c: string) => (body += c));
      r.on('end', () => (r.statusCode === 200 ? resolve(body) : reject(new Error(`status ${r.statusCode}`))));
    }).on('error', reject);
  });
}

/** Sum of a family's series whose labels include `labels`. */
function sum(text: string, name: string, labels: Record<string, string> = {}): number {
  let n = 0;
  for (const line of text.split('\n')) {
    const m = new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`).exec(line);
    if (!m) continue;
    const got = Object.fromEntries([...(m[1] as string).matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) n += Number(m[2]);
  }
  return n;
}

describe('hubble metrics under Windows, fed by pktmon through the agent\'s flow pipeline', () => {
  const src = memorySource();
  let server: HttpServer;
  let stop: () => Promise<void>;

  before(async () => {
    const def = createPktmonPlugin(() => src);
    const { ctx, abort, metrics } = pluginContext(def);
    const keys = agentKeys({ os: 'windows', names: ['pktmon'], defaults: ['pktmon'] });
    const agent = agentConfig(keys, loadValues({
      env: { RETINA_HUBBLE_METRICS_ENABLED: 'flow:sourceContext=ip;destinationContext=ip tcp port-distribution:destinationContext=reserved-identity icmp', RETINA_METRICSPODLABELSALLOWLIST: 'app' },
      specs: collectSpecs(keys),
    }));
    assert.deepEqual(agent.hubbleMetrics.refused.map((r) => r.entry), ['icmp']);
    const registry = createMetricsRegistry({ processMetrics: false });
    const hm = createHubbleMetrics({ metrics: agent.hubbleMetrics.metrics, registry, podLabels: agent.metricsPodLabels.map((key) => ({ key, name: podLabelName(key) })) });
    const pipeline = await startNodePipeline({ agent, metrics, log: silentLogger, watches: undefined, consumers: [{ name: 'hubble_metrics', consumer: hm, forget: hm }] });
    assert.ok(pipeline.flows, 'hubble.metrics.enabled alone makes the pipeline want flows');
    const handle = await def.start({ ...ctx, flows: pipeline.flows });
    server = await startHttpServer({ host: HOST, port: 0, log: silentLogger, expose: () => registry.exposeBody(), readiness: { ready: () => true, status: () => [] } });
    stop = async () => { abort.abort(); await handle[Symbol.asyncDispose](); await pipeline[Symbol.asyncDispose](); hm[Symbol.dispose](); };
  });
  after(async () => {
    await stop();
    await server[Symbol.asyncDispose]();
  });

  it('the Server 2022 capture\'s 38 flows are counted in hubble_flows_processed_total, with Cilium\'s labels', async () => {
    src.push(capture('pktmon-20348-server2022.etl'));
    const body = await until('38 flows counted', async () => {
      const b = await scrape(server.address.port);
      return sum(b, 'hubble_flows_processed_total') === 38 ? b : undefined;
    });
    assert.equal(sum(body, 'hubble_flows_processed_total', { type: 'Trace', verdict: 'FORWARDED' }), 38);
    const lines = body.split('\n').filter((l) => l.startsWith('hubble_flows_processed_total{'));
    for (const l of lines) {
      assert.match(l, /^hubble_flows_processed_total\{protocol="(TCP|UDP|ICMPv4|ICMPv6|Unknown L4)",type="Trace",subtype="[a-z-]+",verdict="FORWARDED",source="[0-9a-f.:]+",source_label_app="",destination="[0-9a-f.:]+",destination_label_app=""\} \d+$/, l);
    }
    assert.match(body, /# TYPE hubble_tcp_flags_total counter/);
    assert.match(body, /# HELP hubble_port_distribution_total Numbers of packets distributed by destination port/);
  });
});
