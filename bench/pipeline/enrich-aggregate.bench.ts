/**
 * Pipeline throughput: enrich + aggregate into advanced metrics, on synthetic flow batches
 * (1 000 pods, 256 flows per batch, Retina's annotation-mode metric set in remote context, and a
 * lighter forward-only set), measured in one run on one core. Prints one JSON line.
 * Decoding kernel records is measured by the packetparser benchmark.
 */
import { createEnricher } from '../../src/enricher/index.js';
import { createFlow, type Endpoint, type Flow } from '../../src/flow/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { annotationSpec, createMetricsModule, parseMetricsSpec, type MetricsSpec } from '../../src/metrics/module/index.js';

const PODS = 1000;
const BATCH = 256;
const SECONDS = Number(process.env['BENCH_SECONDS'] ?? 3);

const table = new Map<string, Endpoint>();
const ips: string[] = [];
for (let i = 0; i < PODS; i++) {
  const ip = `10.${(i >> 8) & 255}.${i & 255}.7`;
  ips.push(ip);
  table.set(ip, { namespace: `ns-${i % 20}`, podName: `pod-${i}`, workloadKind: 'Deployment', workloadName: `app-${i % 50}`, service: `svc-${i % 50}`, nodeName: 'node-1', zone: 'zone-a', labels: {} });
}

function makeBatches(n: number): Flow[][] {
  let seed = 42;
  const rnd = (m: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % m);
  const out: Flow[][] = [];
  for (let b = 0; b < n; b++) {
    const flows: Flow[] = [];
    for (let i = 0; i < BATCH; i++) {
      // Traffic concentrates on few pairs, as real pods talk to few peers.
      const s = rnd(PODS), d = (s + 1 + rnd(8)) % PODS;
      flows.push(createFlow({ srcIp: ips[s] as string, dstIp: ips[d] as string, verdict: rnd(50) === 0 ? 'DROPPED' : 'FORWARDED', dropReason: 'NETFILTER_DROP', proto: 6, srcPort: 40000 + rnd(4), dstPort: 443, tcpFlags: 0x18, packets: 1, bytes: 1400, direction: 'EGRESS' }));
    }
    out.push(flows);
  }
  return out;
}

function run(name: string, spec: MetricsSpec): Record<string, unknown> {
  const metrics = createMetricsRegistry({ processMetrics: false });
  const mod = createMetricsModule({ metrics, remoteContext: true });
  mod.apply(spec);
  const enricher = createEnricher({ byIp: (ip) => table.get(ip) }, mod);
  const batches = makeBatches(64);
  for (let i = 0; i < 200; i++) enricher.consume({ source: 'bench', flows: batches[i % batches.length] as Flow[] }); // warm-up
  globalThis.gc?.();
  const heap0 = process.memoryUsage().heapUsed;
  let flows = 0;
  const t0 = process.hrtime.bigint();
  const end = t0 + BigInt(SECONDS * 1e9);
  let i = 0;
  while (process.hrtime.bigint() < end) {
    for (let k = 0; k < 50; k++) {
      enricher.consume({ source: 'bench', flows: batches[i++ % batches.length] as Flow[] });
      flows += BATCH;
    }
  }
  const ns = Number(process.hrtime.bigint() - t0);
  const cpu = process.cpuUsage();
  return {
    name, flowsPerSec: Math.round(flows / (ns / 1e9)), nsPerFlow: +(ns / flows).toFixed(1),
    heapDeltaMB: +((process.memoryUsage().heapUsed - heap0) / 1048576).toFixed(1), families: mod.families().length,
    cpuSeconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
  };
}

const results = [
  run('annotation-set', annotationSpec(Array.from({ length: 20 }, (_, i) => `ns-${i}`))),
  run('forward-only', parseMetricsSpec({ contextOptions: [{ metricName: 'forward_count', sourceLabels: ['podname', 'namespace'], destinationLabels: ['podname', 'namespace'] }] })),
];
console.log(JSON.stringify({ bench: 'pipeline/enrich-aggregate', pods: PODS, batch: BATCH, seconds: SECONDS, goalFlowsPerSec: 1_000_000, node: process.version, results }));
