/**
 * packetparser's side of the CPU budget (cpuBudget): measures the agent's CPU every control period
 * (process.cpuUsage: utime + stime of every thread), steps the controller (ebpf-shared/budget.ts),
 * writes its limit into retina_packetparser_budget, reads what the kernel folded from
 * retina_packetparser_budget_cpu, and while the limit is on flushes the in-kernel aggregates every
 * period. Idle and under budget it arms no timer: the controller steps from the drains.
 */
import { cpus } from 'node:os';
import { mapWriter, perCpuReader, u32Key, type BpfObject } from '../../../ffi/linux/index.js';
import { catalog } from '../../../metrics/index.js';
import { errMessage, type PluginContext, type ResourceStack } from '../../../plugin/index.js';
import { createBudgetController, type BudgetDecision } from '../ebpf-shared/budget.js';

export const BUDGET_MAP = 'retina_packetparser_budget';
export const BUDGET_CPU_MAP = 'retina_packetparser_budget_cpu';
export const AGG_MAP = 'retina_packetparser_agg';
/** struct pp_agg_key: as struct pp_ct_key, so the keyed sweep takes either. */
export const AGG_KEY_SIZE = 44;

const PLUGIN = 'packetparser';

export interface BudgetTiming {
  /** The control period (default 1 s): the controller's step and, while the limit is on, the aggregates' flush. */
  readonly budgetPeriodMs?: number;
  /** Tests: the process's CPU so far, microseconds (default process.cpuUsage()). */
  readonly cpuMicros?: () => number;
}

export interface BudgetLink {
  /** The records of one drain (the controller counts them, and steps when a period has passed). */
  onRecords(n: number): void;
}

/** With the budget on, records are folded while this much of the ring is unread: three quarters. */
export function foldAboveBytes(ringSize: number): number {
  return Math.floor((ringSize / 4) * 3);
}

/** The kernel's bucket for `limit` records/s per CPU: a tenth of a second's worth at once, at least 4. */
export function budgetValue(limit: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeBigUInt64LE(BigInt(limit), 0);
  b.writeBigUInt64LE(BigInt(limit ? Math.max(4, Math.ceil(limit / 10)) : 0), 8);
  return b;
}

/** Starts the budget (nothing when cpuBudget is 0). `flush` runs the aggregates' flush and drains the ring. */
export function startBudget(s: ResourceStack, ctx: PluginContext<unknown>, obj: BpfObject, lostMap: string, flush: () => void, timing: BudgetTiming = {}): BudgetLink {
  const millicores = ctx.agent.cpuBudgetMillicores;
  if (!millicores) return { onRecords: () => undefined };
  const periodMs = timing.budgetPeriodMs ?? 1000;
  const cpuMicros = timing.cpuMicros ?? ((): number => {
    const u = process.cpuUsage();
    return u.user + u.system;
  });
  const ctl = createBudgetController({ budgetCores: millicores / 1000, cpus: cpus().length });
  const cfg = mapWriter(obj.map(BUDGET_MAP));
  const perCpu = perCpuReader(obj.map(BUDGET_CPU_MAP));
  const lostCpu = perCpuReader(obj.map(lostMap)); // its own reading: the ring's reader reports the losses
  const key = u32Key(0);
  const records = ctx.metrics.counter(catalog.foldedRecords);
  const limitGauge = ctx.metrics.gauge(catalog.cpuBudgetRecordLimit);
  const cores = ctx.metrics.gauge(catalog.cpuBudgetCores);
  cfg.put(key, budgetValue(0));
  for (const reason of ['cpu_budget', 'ring_pressure', 'aggregate_map_full']) records.inc({ plugin: PLUGIN, reason }, 0);
  limitGauge.set({ plugin: PLUGIN }, 0);
  cores.set({ kind: 'budget' }, millicores / 1000);
  s.defer(() => ctx.metrics.reset([catalog.cpuBudgetRecordLimit, catalog.cpuBudgetCores]));

  // The first period holds the plugin's own start (loading its objects): the controller engages only
  // after two periods over its target, so a start is not taken for a storm.
  let t0 = performance.now();
  let c0 = cpuMicros();
  let taken = 0;
  let seen = { budget: 0, pressure: 0, full: 0, lost: 0 };
  let timer: NodeJS.Timeout | undefined;
  let starvedSaid = false;
  s.defer(() => clearInterval(timer));

  const kernelCounts = (): typeof seen => {
    const v = perCpu.sum(key); // struct pp_budget_cpu: tokens, last_ns, folded_budget, folded_pressure, agg_full
    return { budget: v?.[2] ?? 0, pressure: v?.[3] ?? 0, full: v?.[4] ?? 0, lost: lostCpu.sum(key)?.[0] ?? 0 };
  };
  const say = (d: BudgetDecision, folded: number, pressure: number, lost: number): void => {
    const fields = {
      budgetCores: millicores / 1000, agentCores: round(d.cores), recordLimitPerCpu: d.limit, usPerRecord: d.usPerRecord === undefined ? null : round(d.usPerRecord),
      foldedLastPeriod: folded, foldedForRingPressure: pressure, lostLastPeriod: lost,
    };
    if (d.change === 'engaged') {
      ctx.log.warn('cpu budget exceeded (or the ring overflowed): records beyond the limit are folded into in-kernel aggregates (counts stay exact, per-connection detail is given up)', fields);
      starvedSaid = false;
    } else if (d.change === 'released') {
      ctx.log.info('cpu budget: back under budget, every record written again', fields);
    }
    if (d.starved && !starvedSaid) {
      starvedSaid = true;
      ctx.log.warn('cpu budget cannot be held by folding records: the agent is over it at the smallest record limit', fields);
    }
  };
  const step = (): void => {
    const now = performance.now();
    const cpu = cpuMicros();
    const k = kernelCounts();
    const budgetFolds = k.budget - seen.budget;
    const pressure = k.pressure - seen.pressure;
    const full = k.full - seen.full;
    const lost = k.lost - seen.lost;
    seen = k;
    const folded = budgetFolds + pressure;
    if (budgetFolds > 0) records.inc({ plugin: PLUGIN, reason: 'cpu_budget' }, budgetFolds);
    if (pressure > 0) records.inc({ plugin: PLUGIN, reason: 'ring_pressure' }, pressure);
    if (full > 0) records.inc({ plugin: PLUGIN, reason: 'aggregate_map_full' }, full);
    const before = ctl.limit;
    const d = ctl.step({ wallS: (now - t0) / 1000, cpuS: (cpu - c0) / 1e6, records: taken, folded, behind: pressure + lost });
    t0 = now;
    c0 = cpu;
    taken = 0;
    if (d.limit !== before) cfg.put(key, budgetValue(d.limit));
    limitGauge.set({ plugin: PLUGIN }, d.limit);
    cores.set({ kind: 'agent' }, round(d.cores));
    say(d, folded, pressure, lost);
    if (d.limit && !timer) {
      timer = setInterval(tick, periodMs);
      timer.unref();
    } else if (!d.limit && timer) {
      clearInterval(timer);
      timer = undefined;
    }
  };
  // While the limit is on: flush what the kernel folded (its records count in this period), then step.
  const tick = (): void => {
    try {
      flush();
      step();
      ctx.status.ok('cpu budget');
    } catch (e) {
      ctx.status.degraded('cpu budget', errMessage(e));
    }
  };
  // Under budget the controller steps from the drains: at most once a period, and never inside the
  // ring's callback (a drain may hand records on from within libbpf's loop).
  let due: NodeJS.Immediate | undefined;
  s.defer(() => clearImmediate(due));
  const stepSoon = (): void => {
    due = undefined;
    if (timer) return;
    try {
      step();
    } catch (e) {
      ctx.status.degraded('cpu budget', errMessage(e));
    }
  };
  return {
    onRecords(n) {
      taken += n;
      if (!timer && !due && performance.now() - t0 >= periodMs) due = setImmediate(stepSoon);
    },
  };
}

const round = (x: number): number => Math.round(x * 1000) / 1000;
