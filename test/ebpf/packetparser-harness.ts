/**
 * Runs the packetparser plugin in the network namespace it is started in (the tests start it with
 * `ip netns exec`, so its endpoint watcher sees that namespace's veths, not the machine's), driven
 * by JSON lines on stdin; answers one JSON line per command on stdout.
 *
 * Commands: start {config, agent, interest (string[] | null: bypass), timing, apiServer (addresses:
 * the flows also go through the Metrics Module's API-server latency stage), sums (the flows are only
 * summed by observation point and addresses, not kept: storms; costUs: CPU each summed flow burns, as a
 * heavier pipeline would)}, sums (those sums), interest {ips},
 * flows (the flows since the previous call), lost, logs, metrics, block {argv} (spawnSync: the
 * event loop, and so the ring buffer's reader, stands still while it runs), runstats (BPF run-time
 * statistics on), stop. With `workers` (start), the flows go through the node's pipeline with that
 * many pipeline workers (pipelineWorkers), standalone, with `workerSpec` applied: the workers count
 * the raw records, and a check module on this thread counts the flows decoded here; `workerCounts`
 * answers both expositions' adv_* lines (after the workers handed their counts over) and the
 * workers' figures.
 */
import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { AgentConfig } from '../../src/config/index.js';
import type { Flow, FlowBatch, FlowConsumer, RawDecoderRef, RawRecordSink } from '../../src/flow/index.js';
import { createApiServerLatency } from '../../src/metrics/module/apiserver.js';
import type { IpInterest } from '../../src/plugin/index.js';
import type { PacketparserConfig } from '../../src/plugins/linux/packetparser/config.js';
import { RAW_PARTITION_KEY, peerHash } from '../../src/plugins/linux/packetparser/raw-decoder.js';
import { enableBpfRunStats } from './run-stats.js';
import { runPacketparser, type PacketparserTiming } from '../../src/plugins/linux/packetparser/index.js';
import { fakeContext, testAgentConfig, type Collected } from './fake-context.js';
import { silentLogger } from '../../src/log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../../src/metrics/index.js';
import { createMetricsModule } from '../../src/metrics/module/index.js';
import { startNodePipeline, type NodePipeline } from '../../src/pipeline/index.js';
import { specOf } from '../fakes/metrics-spec.js';

/** A flow as the harness reports it. */
export interface PFlow {
  readonly obs: string;
  readonly dir: string;
  readonly reply: boolean | null;
  readonly src: string;
  readonly dst: string;
  readonly sport: number;
  readonly dport: number;
  readonly proto: number;
  readonly v: number;
  readonly flags: number;
  readonly tsval: number;
  readonly tsecr: number;
  readonly packets: number;
  readonly bytes: number;
  readonly counts: number[] | null;
}

interface Command {
  readonly op: string;
  readonly config?: PacketparserConfig;
  readonly agent?: Partial<AgentConfig>;
  readonly interest?: string[] | null;
  readonly timing?: PacketparserTiming;
  readonly ips?: string[];
  readonly argv?: string[];
  readonly apiServer?: string[];
  readonly workers?: number;
  readonly workerSpec?: unknown;
  /** With `workers`: no consumer on the main thread (it then decodes nothing). */
  readonly workersOnly?: boolean;
  readonly sums?: boolean;
  readonly costUs?: number;
}

/** Flows summed by `${obs} ${src} ${dst}` (the sums mode). */
export type FlowSums = Record<string, { records: number; packets: number; bytes: number }>;

const compact = (f: Flow): PFlow => ({
  obs: f.observationPoint, dir: f.direction, reply: f.isReply ?? null, src: f.srcIp, dst: f.dstIp, sport: f.srcPort, dport: f.dstPort,
  proto: f.proto, v: f.ipVersion, flags: f.tcpFlags, tsval: f.tcpTsval, tsecr: f.tcpTsecr, packets: f.packets, bytes: f.bytes,
  counts: f.tcpFlagCounts ? [...f.tcpFlagCounts] : null,
});

let handle: AsyncDisposable | undefined;
let pipeline: NodePipeline | undefined;
let check: MetricsRegistry | undefined;
const advLines = async (m: MetricsRegistry | undefined): Promise<string[]> =>
  ((await m?.expose())?.body ?? '').split('\n').filter((l) => l.startsWith('networkobservability_adv_')).sort();
let sums: FlowSums = {};
let got: Collected | undefined;
let flowsSeen = 0;
let stats: Disposable | undefined;
let ips = new Set<string>();
/** Records the plugin handed to the workers' sink: how many, how many in place from the ring (pushRing), and how many whose peer_hash is not the one computed here. */
let hashes = { checked: 0, inPlace: 0, wrong: 0 };

/** The sink, with every record's kernel-written peer_hash compared with peerHash() of its addresses. */
function tapHashes(s: RawRecordSink): RawRecordSink {
  const check = (v: DataView, off: number): void => {
    hashes.checked++;
    if (v.getUint32(off + RAW_PARTITION_KEY.offset, true) !== peerHash(v, off)) hashes.wrong++;
  };
  return {
    get param() {
      return s.param;
    },
    set param(p: number) {
      s.param = p;
    },
    push(v, off, size) {
      check(v, off);
      s.push(v, off, size);
    },
    pushRing(v, off, size) {
      check(v, off);
      hashes.inPlace++;
      s.pushRing(v, off, size);
    },
    copyRun: () => s.copyRun(),
    flush: () => s.flush(),
    get wantsFlows() {
      return s.wantsFlows;
    },
    consume: (b) => s.consume(b),
  };
}
const listeners = new Set<() => void>();

async function run(c: Command): Promise<unknown> {
  switch (c.op) {
    case 'start': {
      await handle?.[Symbol.asyncDispose](); // a test that failed midway left its plugin running
      handle = undefined;
      await pipeline?.[Symbol.asyncDispose]();
      pipeline = undefined;
      const made = fakeContext(c.config as PacketparserConfig, { enablePodLevel: true, ...c.agent });
      got = made.got;
      flowsSeen = 0;
      ips = new Set(c.interest ?? []);
      const interest: IpInterest = {
        bypass: c.interest === null,
        ips: () => ips,
        onChange: (l) => {
          listeners.add(l);
          return { [Symbol.dispose]: () => void listeners.delete(l) };
        },
      };
      const api = c.apiServer ? new Set(c.apiServer) : undefined;
      const latency = api ? createApiServerLatency({ metrics: made.got.metrics, isApiServer: (ip) => api.has(ip) }) : undefined;
      sums = {};
      const costUs = c.costUs ?? 0;
      const summing = {
        consume: (b: FlowBatch): void => {
          if (costUs) {
            // CPU time, not wall time: on a busy machine a spin by the clock burns less than it says.
            const cpu = (): number => {
              const u = process.cpuUsage();
              return u.user + u.system;
            };
            const until = cpu() + costUs * b.flows.length;
            while (cpu() < until);
          }
          for (const f of b.flows) {
            const k = `${f.observationPoint} ${f.srcIp} ${f.dstIp}`;
            const t = (sums[k] ??= { records: 0, packets: 0, bytes: 0 });
            t.records++;
            t.packets += f.packets;
            t.bytes += f.bytes;
          }
        },
      };
      let flows: FlowConsumer | undefined = c.sums ? summing : latency ? { consume: (b: FlowBatch) => (made.ctx.flows?.consume(b), latency.consume(b)) } : made.ctx.flows;
      if (c.workers !== undefined) {
        // Standalone there are no pods to scope by namespace: the spec counts every flow.
        const spec = { ...specOf(c.workerSpec), namespaces: undefined };
        check = createMetricsRegistry({ processMetrics: false });
        const checkModule = createMetricsModule({ metrics: check, remoteContext: true });
        checkModule.apply(spec);
        const collect = made.ctx.flows;
        pipeline = await startNodePipeline({
          agent: testAgentConfig({ enablePodLevel: true, remoteContext: true, pipelineWorkers: c.workers, ...c.agent }), metrics: made.got.metrics, log: silentLogger, watches: undefined,
          consumers: c.workersOnly ? [] : [{ name: 'check', consumer: { consume: (b) => (checkModule.consume(b), collect?.consume(b)) } }],
        });
        pipeline.module?.apply(spec);
        hashes = { checked: 0, inPlace: 0, wrong: 0 };
        const inner = pipeline.flows;
        flows = inner && {
          consume: (b: FlowBatch) => inner.consume(b),
          openRaw: (ref: RawDecoderRef) => {
            const sink = inner.openRaw?.(ref);
            return sink && tapHashes(sink);
          },
        };
      }
      handle = await runPacketparser({ ...made.ctx, interest, flows }, c.timing ?? {});
      return { status: got.status };
    }
    case 'interest':
      ips = new Set(c.ips ?? []);
      for (const l of listeners) l();
      return null;
    case 'flows': {
      const all = (got?.batches ?? []).flatMap((b) => b.flows);
      const out = all.slice(flowsSeen).map(compact);
      flowsSeen = all.length;
      return out;
    }
    case 'sums':
      return sums;
    case 'lost':
      return (got?.lost ?? []).filter((l) => l.type === 'kernel').reduce((a, l) => a + l.n, 0);
    case 'logs':
      return got?.logs ?? [];
    case 'metrics':
      return (await got?.metrics.expose())?.body ?? '';
    case 'block': {
      const [cmd, ...args] = c.argv ?? [];
      const r = spawnSync(cmd as string, args, { encoding: 'utf8', timeout: 60_000 });
      if (r.status !== 0) throw new Error(`${cmd} exited ${r.status}: ${r.stderr}`);
      return r.stdout;
    }
    case 'workerCounts':
      await pipeline?.workers?.flushNow();
      return { workers: await advLines(got?.metrics), check: await advLines(check), stats: pipeline?.workers?.stats(), hashes };
    case 'runstats':
      // The kernel's per-program run time, held on while the harness lives (read with bpftool).
      stats ??= enableBpfRunStats();
      return null;
    case 'stop':
      await handle?.[Symbol.asyncDispose]();
      handle = undefined;
      await pipeline?.[Symbol.asyncDispose]();
      pipeline = undefined;
      return { status: got?.status ?? [] };
    default:
      throw new Error(`unknown op ${c.op}`);
  }
}

const rl = createInterface({ input: process.stdin });
let queue = Promise.resolve();
rl.on('line', (line) => {
  queue = queue.then(async () => {
    try {
      const result = await run(JSON.parse(line) as Command);
      process.stdout.write(`${JSON.stringify({ ok: true, result })}\n`);
    } catch (e) {
      process.stdout.write(`${JSON.stringify({ ok: false, error: e instanceof Error ? `${e.message}${e.cause ? ` (${String((e.cause as Error).message ?? e.cause)})` : ''}` : String(e) })}\n`);
    }
  });
});
rl.on('close', () => {
  void queue.then(async () => {
    await handle?.[Symbol.asyncDispose]();
    await pipeline?.[Symbol.asyncDispose]();
    process.exit(0);
  });
});
