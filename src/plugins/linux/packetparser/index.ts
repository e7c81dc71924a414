/**
 * packetparser: pod-level flows from tc programs on the host ends of pod veths (and, with low
 * aggregation, on the host interfaces), with an in-kernel connection table. Records reach the
 * agent through a ring buffer and go on as Flow batches. See README.md.
 */
import {
  loadSys, mapKeys, mapReader, mapWriter, openBpfObject, openLinkDumper, packetparserHooks, perCpuReader, removeTcLeftovers, testRunProgram, u32Key,
  type BpfObject, type HookChoice, type RingBufferReader,
} from '../../../ffi/linux/index.js';
import type { Flow, RawRecordSink } from '../../../flow/index.js';
import { catalog } from '../../../metrics/index.js';
import { ResourceStack, definePlugin, errMessage, every, type HookSpec, type PluginContext } from '../../../plugin/index.js';
import { emitFlows, wireEvents } from '../ebpf-shared/events.js';
import { onHook, wakeupBytes } from '../ebpf-shared/hooks.js';
import { defaultRouteInterfaces } from '../packetforward/routes.js';
import { packetparserConfig, type PacketparserConfig } from './config.js';
import { kernelClock, type KernelClock } from '../ebpf-shared/clock.js';
import { createPacketDecoder, type PacketDecoder } from './decode.js';
import { RAW_DECODER_MODULE, RAW_PARTITION_KEY } from './raw-decoder.js';
import {
  CONNTRACK_MAP, CT_COUNT_MAP, CT_KEY_SIZE, CT_VALUE_SIZE, EVENTS_MAP, FILTER_GEN_MAP, FILTER_MAP, LOST_MAP, SWEEP_KEYS_PER_RUN, SWEEP_PROGRAM, SWEEP_RESULT_MAP, SWEEP_RESULT_SIZE,
  addSweepResults, decodeSweepResult, sweepInput, sweepKeysInput, syncFilter,
  type SweepResult,
} from './maps.js';
import { attachTcPrograms, watchLinks } from '../ebpf-shared/tc-links.js';
import { AGG_KEY_SIZE, AGG_MAP, foldAboveBytes, startBudget, type BudgetLink, type BudgetTiming } from './budget.js';
import { createEvictionTracker, tableCounts, type TableCounts } from './table.js';

const hooks: HookSpec[] = [{ kind: 'library', name: 'libbpf.so.1' }, { kind: 'btf' }, { kind: 'tc' }];

const GAUGES = [
  catalog.conntrackPacketsTx, catalog.conntrackPacketsRx, catalog.conntrackBytesTx, catalog.conntrackBytesRx, catalog.conntrackTotalConnections,
];
const EMITS = [
  catalog.parsedPacketsCounter, catalog.lostEventsCounter, catalog.interfaceAttachFailed, ...GAUGES,
  catalog.foldedRecords, catalog.cpuBudgetRecordLimit, catalog.cpuBudgetCores, catalog.conntrackEvictions,
];

export const packetparser = definePlugin<PacketparserConfig>({
  name: 'packetparser',
  os: 'linux',
  description: 'Pod-level flows from tc programs on pod veths (and host interfaces), with in-kernel connection tracking',
  defaultEnabled: false,
  podLevelOnly: true,
  config: packetparserConfig,
  hooks,
  emits: EMITS,
  start: (ctx) => runPacketparser(ctx),
});

export interface PacketparserTiming extends BudgetTiming {
  /** The endpoint watcher follows link notifications; it also reads every link this often (default 60 s). */
  readonly vethResyncMs?: number;
  /** While a veth fails to attach, the veths are looked at again this often (default 1 s). */
  readonly attachRetryMs?: number;
  /**
   * How often the kernel sweeps the connection table (default: 15 s as Retina's GC, or the report
   * interval when it is shorter at high aggregation, so an idle direction's counts wait at most
   * about two intervals).
   */
  readonly gcIntervalMs?: number;
  /** Tests: load the programs with (true) or without (false) Service translation, whatever the kernel has. */
  readonly serviceTranslation?: boolean;
  /** Forces the keyed sweep (packetparser_sweep_keys, what kernels before 5.13 get) either way: the kernel matrix runs both. */
  readonly keyedSweep?: boolean;
}

/** Starts the plugin; tests pass shorter timings. */
export function runPacketparser(ctx: PluginContext<PacketparserConfig>, timing: PacketparserTiming = {}): Promise<ResourceStack> {
  return ResourceStack.build(async (s) => {
    if (!ctx.flows) {
      const why = 'nothing wants flows (enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters are off)';
      ctx.log.warn(`${why}: packetparser attaches nothing`);
      ctx.status.degraded('enablePodLevel', `${why}: packetparser has nothing to feed`);
      return;
    }
    const { endpoint, host, translate, sweep: sweepName } = onHook(ctx.log, 'tc/packetparser', () =>
      packetparserHooks({
        ...(timing.serviceTranslation === undefined ? {} : { translate: timing.serviceTranslation }),
        ...(timing.keyedSweep === undefined ? {} : { keyedSweep: timing.keyedSweep }),
      }),
    );
    if (!translate) {
      ctx.log.warn(
        'the kernel has no conntrack kfuncs (bpf_skb_ct_lookup, Linux 5.18+ with nf_conntrack built in or loaded): flows keep a ClusterIP Service\'s address, ' +
          'so in remote context traffic through a Service may be counted twice (a reply from a backend on this node once from the backend and once from the Service\'s address)',
      );
    }
    const high = ctx.agent.dataAggregationLevel === 'high';
    const bypass = ctx.agent.bypassLookupIPOfInterest || ctx.interest.bypass;
    const ringSize = ctx.agent.packetParserRingBufferSize;
    const used = high ? endpoint : [...endpoint, ...host];
    const obj = s.use(
      onHook(ctx.log, 'tc/packetparser', () =>
        openBpfObject('packetparser', {
          programs: [...used.map((c) => c.program), sweepName],
          rodata: {
            bypass_lookup: bypass,
            aggregate_high: high,
            count_totals: ctx.agent.enableConntrackMetrics,
            sampling_rate: ctx.agent.dataSamplingRate,
            report_interval_ns: ctx.agent.conntrackReportIntervalMs * 1_000_000,
            wakeup_bytes: wakeupBytes(ringSize),
            fold_above_bytes: ctx.agent.cpuBudgetMillicores ? foldAboveBytes(ringSize) : 0,
          },
          maxEntries: { [EVENTS_MAP]: ringSize, [FILTER_MAP]: ctx.agent.filterMapMaxEntries, [CONNTRACK_MAP]: ctx.config.conntrackMaxEntries },
        }),
      ),
    );
    for (const [m, size] of [[CONNTRACK_MAP, CT_VALUE_SIZE], [SWEEP_RESULT_MAP, SWEEP_RESULT_SIZE]] as const) {
      const got = obj.map(m).valueSize;
      if (got !== size) throw new Error(`${m} values are ${got} bytes, maps.ts expects ${size}: rebuild with make native`);
    }
    s.defer(() => ctx.metrics.reset(GAUGES));
    if (!bypass) mirrorInterest(s, ctx, obj);

    const clock = kernelClock();
    const decode = createPacketDecoder({ clock });
    let budget: BudgetLink = { onRecords: () => undefined }; // the CPU budget's, once it starts (below)
    // With pipeline workers, records are copied to them raw (decoded, enriched and counted there);
    // this thread decodes them as well only for its own consumers (Hubble, exporters).
    const raw = ctx.flows.openRaw?.({ source: 'packetparser', module: RAW_DECODER_MODULE, options: {}, partitionKey: RAW_PARTITION_KEY });
    const ring = raw ? wireRaw(s, ctx, obj, raw, decode, clock, (n) => budget.onRecords(n)) : wireEvents(s, ctx, obj, {
      source: 'packetparser', eventsMap: EVENTS_MAP, lostMap: LOST_MAP, decode,
      onRecords: (flows) => {
        budget.onRecords(flows.length);
        emitFlows(ctx, 'packetparser', flows);
      },
    });

    // The sweep (in the kernel): reports what idle and expired connections still hold, deletes the
    // expired, sums the live for the conntrack_* gauges. Its records are drained at once. At stop it
    // runs once more, after the hooks are gone (the stack unwinds in reverse), and reports everything.
    // Kernels before 5.13 (no bpf_for_each_map_elem) run the keyed sweep: the same work on the keys the
    // agent lists, SWEEP_KEYS_PER_RUN per run (hooks.ts chooses).
    const sweepProgram = obj.program(sweepName);
    const sweepResult = mapReader(obj.map(SWEEP_RESULT_MAP));
    const resultKey = u32Key(0);
    const sweepRun = (input: Uint8Array): SweepResult => {
      testRunProgram(sweepProgram, input, 1);
      const r = sweepResult.read(resultKey);
      if (!r) throw new Error(`${SWEEP_RESULT_MAP} has no entry 0`);
      return decodeSweepResult(r);
    };
    // The keyed sweep over one map's keys (the connection table's, or the CPU budget's aggregates').
    const sweepKeyed = (final: boolean, map: string, agg: boolean): SweepResult => {
      const keys = mapKeys(obj.map(map), agg ? AGG_KEY_SIZE : CT_KEY_SIZE);
      let r = sweepRun(sweepKeysInput(final, keys.slice(0, SWEEP_KEYS_PER_RUN), agg));
      for (let i = SWEEP_KEYS_PER_RUN; i < keys.length; i += SWEEP_KEYS_PER_RUN) r = addSweepResults(r, sweepRun(sweepKeysInput(final, keys.slice(i, i + SWEEP_KEYS_PER_RUN), agg)));
      return r;
    };
    // The sweep walks the connections, then flushes the CPU budget's aggregates (`aggregatesOnly`: those alone);
    // its records (written without a wake-up) are drained right after.
    const runSweep = (final: boolean, aggregatesOnly = false): SweepResult => {
      clock.resync();
      if (raw) raw.param = clock.offsetMs();
      let r: SweepResult;
      if (sweepName === SWEEP_PROGRAM) r = sweepRun(sweepInput(final, aggregatesOnly));
      else {
        const conns = aggregatesOnly ? undefined : sweepKeyed(final, CONNTRACK_MAP, false);
        const aggs = sweepKeyed(final, AGG_MAP, true); // after the connections, whose reports it may hold
        r = conns ? addSweepResults(conns, aggs) : aggs;
      }
      // The final sweep's records are the last (the hooks are gone): all of them, now. Otherwise in
      // bounded slices from the event loop: under a storm the ring never empties, and a drain to
      // its end would hold the event loop (and the CPU budget's controller) for as long.
      if (final) ring.drain();
      else ring.drainSoon();
      return r;
    };
    // The table's own counts (table.ts): what it inserted and deleted at a close, and the packets of new
    // connections it had no room for, which are lost (reported after each sweep and at stop).
    const counts = perCpuReader(obj.map(CT_COUNT_MAP));
    const tableNow = (): TableCounts => tableCounts(counts.sum(resultKey));
    let untracked = 0;
    const reportUntracked = (now: TableCounts): void => {
      if (now.untracked <= untracked) return;
      ctx.self.lostEvents(catalog.lostEventTypes.kernel, now.untracked - untracked);
      untracked = now.untracked;
    };
    s.defer(() => {
      runSweep(true);
      const lost = ring.takeLost(); // what the final sweep and the last interval could not write
      if (lost > 0) ctx.self.lostEvents(catalog.lostEventTypes.kernel, lost);
      reportUntracked(tableNow());
    });
    // The CPU budget (cpuBudget): over it, the kernel folds records into aggregates, flushed every
    // second. Released before the final sweep above, which flushes what they still hold.
    budget = startBudget(s, ctx, obj, LOST_MAP, () => void runSweep(false, true), timing);

    // clsact filters a killed run left, on any interface: also host programs at high aggregation, old veths.
    const leftovers = removeTcLeftovers([...endpoint, ...host].map((c) => c.program));
    if (leftovers) ctx.log.info('stale tc filters of an earlier run removed', { interface: 'every interface', count: leftovers });
    const sys = loadSys();
    const attachPair = (pair: readonly HookChoice[], ifindex: number, what: string): Disposable & { mode: string } => attachTcPrograms(ctx, obj, pair, ifindex, what, ctx.config.tcMode);

    const hostInterfaces = high ? [] : ctx.config.hostInterfaces.length ? [...ctx.config.hostInterfaces] : defaultRouteInterfaces();
    if (!high && !hostInterfaces.length) ctx.log.warn('no host interface (no default route, packetParserHostInterfaces empty): only pod veths are watched');
    for (const name of hostInterfaces) {
      const ifindex = sys.ifNameToIndex(name);
      if (!ifindex) throw new Error(`host interface ${name} does not exist (packetParserHostInterfaces)`);
      const h = s.use(onHook(ctx.log, `tc on host interface ${name}`, () => attachPair(host, ifindex, `host interface ${name}`)));
      ctx.log.info('host interface attached', { interface: name, ifindex, mode: h.mode });
    }

    const exclude = new Set(hostInterfaces);
    const links = s.use(openLinkDumper());
    const watcher = watchLinks(s, ctx, {
      plugin: 'packetparser', noun: 'endpoint', source: 'veth', watcher: 'endpoint watcher', links: () => links.dump(),
      choose: (all) => all.filter((l) => l.kind === 'veth' && !exclude.has(l.name)),
      attach: (link) => attachPair(endpoint, link.ifindex, `veth ${link.name}`),
      ...(timing.vethResyncMs === undefined ? {} : { resyncMs: timing.vethResyncMs }),
      ...(timing.attachRetryMs === undefined ? {} : { retryMs: timing.attachRetryMs }),
    });

    const gauges = GAUGES.map((g) => ctx.metrics.gauge(g));
    // What the LRU evicted when the table was full (table.ts), from the programs' counts around each sweep.
    const evictions = createEvictionTracker();
    const evicted = ctx.metrics.counter(catalog.conntrackEvictions);
    evicted.inc({}, 0);
    const sweep = (): void => {
      try {
        const before = tableNow();
        const r = runSweep(false);
        const after = tableNow();
        reportUntracked(after);
        const n = evictions.step(before, after, r);
        if (n > 0) {
          evicted.inc({}, n);
          ctx.log.warn('the connection table was full: connections were evicted with the counts they still held (raise packetParserConntrackMaxEntries)', {
            evicted: n, live: r.live, maxEntries: ctx.config.conntrackMaxEntries,
          });
        }
        if (ctx.agent.enableConntrackMetrics) {
          const values = [r.packetsTx, r.packetsRx, r.bytesTx, r.bytesRx, r.live];
          gauges.forEach((g, i) => g.set(values[i] ?? 0));
        }
        ctx.status.ok('conntrack sweep');
      } catch (e) {
        ctx.status.degraded('conntrack sweep', errMessage(e));
      }
    };
    const gcMs = timing.gcIntervalMs ?? (high ? Math.min(15_000, ctx.agent.conntrackReportIntervalMs) : 15_000);
    every(s, gcMs, sweep);
    ctx.log.info('eBPF hooks attached', {
      hooks: used.map((c) => c.label), aggregation: ctx.agent.dataAggregationLevel, bypass, hostInterfaces, veths: watcher.attached().length, serviceTranslation: translate, sweep: sweepName,
    });
  });
}

/**
 * The ring drained into the pipeline's workers (RawRecordSink): walked in JavaScript, the records are
 * copied in runs, each run whole to every worker (copied before the walk gives their space back);
 * with libbpf's walk, one copy per record. One publish per drain.
 */
function wireRaw(s: ResourceStack, ctx: PluginContext<PacketparserConfig>, obj: BpfObject, raw: RawRecordSink, decode: PacketDecoder, clock: KernelClock,
  onCount: (records: number) => void): RingBufferReader {
  raw.param = clock.offsetMs();
  let want = raw.wantsFlows;
  let inPlace = false;
  const reader = wireEvents<Flow | undefined>(s, ctx, obj, {
    source: 'packetparser', eventsMap: EVENTS_MAP, lostMap: LOST_MAP,
    beforeRelease: () => raw.copyRun(),
    decode: (v, off, size) => {
      if (inPlace) raw.pushRing(v, off, size);
      else raw.push(v, off, size);
      return want ? decode(v, off, size) : undefined;
    },
    onRecords: (records) => {
      onCount(records.length);
      raw.flush();
      if (want) {
        const flows = records.filter((f): f is Flow => f !== undefined);
        if (flows.length) raw.consume({ source: 'packetparser', flows });
      }
      want = raw.wantsFlows;
    },
  });
  inPlace = reader.consumer === 'js';
  return reader;
}

/**
 * Keeps the filter map equal to ctx.interest (at most filterMapMaxEntries addresses). After a sync that
 * changed it the filter's generation goes up by one: the pod veth programs keep, per CPU, what the filter
 * said of each veth's pod, and a new generation makes them ask again.
 */
function mirrorInterest(s: ResourceStack, ctx: PluginContext<PacketparserConfig>, obj: BpfObject): void {
  const writer = mapWriter(obj.map(FILTER_MAP));
  const genWriter = mapWriter(obj.map(FILTER_GEN_MAP));
  let gen = 0;
  const current = new Map<string, Buffer>();
  const max = ctx.agent.filterMapMaxEntries;
  const apply = (): void => {
    try {
      const r = syncFilter(writer, current, ctx.interest.ips(), max);
      if (r.removed || r.added) {
        gen = (gen + 1) >>> 0;
        genWriter.put(u32Key(0), u32Key(gen));
      }
      if (r.overflow) ctx.log.warn('IPs of interest left out: the filter map is full', { count: r.overflow, filterMapMaxEntries: max });
      if (r.invalid) ctx.log.warn('IPs of interest that are not addresses were ignored', { count: r.invalid });
      ctx.status.ok('filter map');
    } catch (e) {
      ctx.status.degraded('filter map', errMessage(e));
    }
  };
  apply();
  s.use(ctx.interest.onChange(apply));
}
