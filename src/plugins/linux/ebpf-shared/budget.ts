/**
 * The CPU budget's controller (cpuBudget), pure: from what one control period measured (the agent's
 * CPU, the records it took, the records the kernel folded), the rate of records per second per CPU
 * the kernel should still write one by one (0: no limit). The kernel holds to it with a token bucket
 * per CPU and folds what is beyond it into aggregates (native-linux/packetparser: budget_admit, fold).
 *
 * The rule: aim at `target` of the budget (T = target x B). Engaged when the agent's CPU u exceeds
 * T while records come, `engageAfter` periods in a row (a start-up or a scrape is not a storm): the first limit is what the records cost at the measured rate, scaled to
 * T (rate x T/u, split over the CPUs). Then every period the limit is multiplied by T/u (at most
 * x2 and at least x1/4 a period). With u = F + c x r (a fixed part F, a cost c per record), the
 * fixed point is u = T whatever F and c are, and the step map r -> r T/u has slope F/T < 1 there:
 * it converges without overshoot while F < T. When F alone is above T (the records are not what
 * costs), the limit sinks to `minLimit` and `starved` says so. Released after `quietPeriods` periods
 * in a row in which nothing was folded or lost and u stayed under T.
 *
 * A drain that falls behind (records the kernel folded because the ring was filling, or lost because
 * it was full: whatever the agent's CPU, as on a machine whose other work leaves it too little)
 * counts as over budget too: engaged at half the rate the agent drained, and the limit at least
 * halved each period it goes on. A folded record is counted exactly; a lost one is not.
 */

export interface BudgetSample {
  /** Wall time of the period, seconds. */
  readonly wallS: number;
  /** The agent's CPU (utime + stime, every thread) over the period, seconds. */
  readonly cpuS: number;
  /** Records the agent took from the kernel in the period. */
  readonly records: number;
  /** Records the kernel folded into aggregates in the period (not written one by one). */
  readonly folded: number;
  /** Records the kernel lost (the ring was full) or folded because the ring was filling, in the period: the drain is behind. */
  readonly behind: number;
}

export interface BudgetDecision {
  /** Records per second per CPU written one by one; 0: no limit. */
  readonly limit: number;
  /** The agent's CPU over the period, cores. */
  readonly cores: number;
  /** The agent's CPU per record taken over the period, microseconds (every cost counted: an upper bound). */
  readonly usPerRecord: number | undefined;
  /** Set on the period the limit was put on or taken off. */
  readonly change?: 'engaged' | 'released';
  /** Engaged at the smallest limit and still over the target: what costs is not the records. */
  readonly starved: boolean;
}

export interface BudgetOptions {
  /** The budget, cores (cpuBudget / 1000). */
  readonly budgetCores: number;
  /** CPUs the kernel's buckets are split over. */
  readonly cpus: number;
  /** The share of the budget aimed at (default 0.8: headroom for bursts and the period's lag). */
  readonly target?: number;
  /** The smallest limit, records/s per CPU (default 20: some flows are always seen one by one). */
  readonly minLimit?: number;
  /** The largest limit, records/s per CPU (default 10 000 000). */
  readonly maxLimit?: number;
  /** Periods without folding, under the target, before the limit comes off (default 5). */
  readonly quietPeriods?: number;
  /** Periods in a row over the target before the limit goes on (default 2; a drain behind engages at once). */
  readonly engageAfter?: number;
}

export interface BudgetController {
  step(s: BudgetSample): BudgetDecision;
  readonly limit: number;
}

export function createBudgetController(o: BudgetOptions): BudgetController {
  if (!(o.budgetCores > 0)) throw new Error(`budget of ${o.budgetCores} cores: must be above 0`);
  const target = (o.target ?? 0.8) * o.budgetCores;
  const minLimit = o.minLimit ?? 20;
  const maxLimit = o.maxLimit ?? 10_000_000;
  const quietPeriods = o.quietPeriods ?? 5;
  const cpus = Math.max(1, o.cpus);
  const engageAfter = o.engageAfter ?? 2;
  let limit = 0;
  let quiet = 0;
  let over = 0;
  return {
    get limit() {
      return limit;
    },
    step(s) {
      const wall = Math.max(s.wallS, 1e-3);
      const u = Math.max(0, s.cpuS) / wall;
      const usPerRecord = s.records > 0 ? (s.cpuS / s.records) * 1e6 : undefined;
      let change: BudgetDecision['change'];
      const scale = Math.min(target / Math.max(u, 1e-6), s.behind > 0 ? 0.5 : Infinity);
      if (limit === 0) {
        over = u > target && s.records > 0 ? over + 1 : 0;
        if ((over >= engageAfter || s.behind > 0) && s.records > 0) {
          over = 0;
          limit = clamp(Math.floor(((s.records / wall) * scale) / cpus), minLimit, maxLimit);
          quiet = 0;
          change = 'engaged';
        }
      } else {
        quiet = s.folded === 0 && s.behind === 0 && u < target ? quiet + 1 : 0;
        if (quiet >= quietPeriods) {
          limit = 0;
          quiet = 0;
          change = 'released';
        } else {
          limit = clamp(Math.floor(limit * clamp(scale, 0.25, 2)), minLimit, maxLimit);
        }
      }
      const starved = limit === minLimit && u > target;
      return { limit, cores: u, usPerRecord, starved, ...(change ? { change } : {}) };
    },
  };
}

const clamp = (x: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, x));
