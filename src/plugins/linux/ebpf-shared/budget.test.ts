import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBudgetController, type BudgetController } from './budget.js';

/**
 * A plant for the controller: an agent whose CPU is `fixed` cores plus `usPerRecord` per record it
 * takes; `offered` records/s come, of which the kernel writes at most limit x cpus one by one (the
 * rest folded, flushed as `aggregates` records a second).
 */
function plant(o: { fixed: number; usPerRecord: number; offered: number; cpus: number; aggregates?: number }) {
  return (ctl: BudgetController, periods: number, offered = o.offered) => {
    const out: { cores: number; limit: number; change: string | undefined; starved: boolean }[] = [];
    for (let i = 0; i < periods; i++) {
      const written = ctl.limit ? Math.min(offered, ctl.limit * o.cpus) : offered;
      const folded = offered - written;
      const records = written + (folded > 0 ? (o.aggregates ?? 10) : 0);
      const cpuS = o.fixed + (records * o.usPerRecord) / 1e6;
      const d = ctl.step({ wallS: 1, cpuS, records, folded, behind: 0 });
      out.push({ cores: cpuS, limit: d.limit, change: d.change, starved: d.starved });
    }
    return out;
  };
}

describe('the CPU budget controller', () => {
  it('stays off while the agent is under the target, and says nothing', () => {
    const ctl = createBudgetController({ budgetCores: 0.5, cpus: 2 });
    const run = plant({ fixed: 0.02, usPerRecord: 2, offered: 100_000, cpus: 2 })(ctl, 10); // 0.22 cores < 0.4
    assert.ok(run.every((r) => r.limit === 0 && r.change === undefined && !r.starved));
  });

  it('engages at the rate the target affords, split over the CPUs, after two periods over it', () => {
    const ctl = createBudgetController({ budgetCores: 0.5, cpus: 2 });
    assert.equal(ctl.step({ wallS: 1, cpuS: 1, records: 100_000, folded: 0, behind: 0 }).limit, 0, 'one period over: a start-up, a scrape');
    assert.equal(ctl.step({ wallS: 1, cpuS: 0.1, records: 100_000, folded: 0, behind: 0 }).limit, 0, 'back under: counts again from nothing');
    assert.equal(ctl.step({ wallS: 1, cpuS: 1, records: 100_000, folded: 0, behind: 0 }).limit, 0);
    const d = ctl.step({ wallS: 1, cpuS: 1, records: 100_000, folded: 0, behind: 0 });
    assert.equal(d.change, 'engaged');
    assert.equal(d.limit, 20_000); // 100 000/s x 0.4/1.0, over 2 CPUs
    assert.equal(d.usPerRecord, 10);
    assert.equal(d.cores, 1);
  });

  it('brings a storm\'s agent under the budget within a few periods and holds it there', () => {
    const ctl = createBudgetController({ budgetCores: 0.5, cpus: 2 });
    const run = plant({ fixed: 0.05, usPerRecord: 10, offered: 200_000, cpus: 2 })(ctl, 20); // 2.05 cores unchecked
    assert.equal(run[1]?.change, 'engaged');
    for (const r of run.slice(4)) assert.ok(r.cores <= 0.5 && r.cores >= 0.3, `${r.cores} cores at limit ${r.limit}`);
    const last = run.at(-1) as (typeof run)[number];
    assert.ok(Math.abs(last.cores - 0.4) < 0.01, `settles at the target: ${last.cores}`);
  });

  it('follows a load that grows and shrinks, and lets go once the storm has passed', () => {
    const ctl = createBudgetController({ budgetCores: 0.5, cpus: 4, quietPeriods: 3 });
    const p = plant({ fixed: 0.03, usPerRecord: 5, offered: 300_000, cpus: 4 });
    const storm = p(ctl, 8);
    assert.ok((storm.at(-1)?.cores ?? 1) <= 0.5);
    const bigger = p(ctl, 8, 900_000);
    assert.ok(bigger.slice(2).every((r) => r.cores <= 0.5), 'a bigger storm: the same CPU');
    const calm = p(ctl, 10, 5_000);
    const off = calm.findIndex((r) => r.change === 'released');
    assert.ok(off >= 2 && off <= 6, `released after the quiet periods (period ${off})`);
    assert.equal(calm.at(-1)?.limit, 0);
  });

  it('growth and cuts are bounded per period', () => {
    const ctl = createBudgetController({ budgetCores: 1, cpus: 1, engageAfter: 1 });
    ctl.step({ wallS: 1, cpuS: 2, records: 10_000, folded: 0, behind: 0 }); // engaged at 4000
    assert.equal(ctl.limit, 4000);
    assert.equal(ctl.step({ wallS: 1, cpuS: 0.01, records: 100, folded: 50, behind: 0 }).limit, 8000, 'at most x2');
    assert.equal(ctl.step({ wallS: 1, cpuS: 100, records: 100, folded: 50, behind: 0 }).limit, 2000, 'at least x1/4');
  });

  it('says when folding records cannot hold the budget (what costs is not the records)', () => {
    const ctl = createBudgetController({ budgetCores: 0.5, cpus: 2, minLimit: 20 });
    const run = plant({ fixed: 0.6, usPerRecord: 10, offered: 50_000, cpus: 2 })(ctl, 25);
    assert.equal(run.at(-1)?.limit, 20);
    assert.ok(run.at(-1)?.starved);
  });

  it('engages on a drain that falls behind even under the CPU target, and cuts while it stays behind', () => {
    const ctl = createBudgetController({ budgetCores: 0.5, cpus: 1 });
    const d = ctl.step({ wallS: 1, cpuS: 0.05, records: 10_000, folded: 3000, behind: 3000 });
    assert.equal(d.change, 'engaged');
    assert.equal(d.limit, 5000, 'half the rate drained');
    assert.equal(ctl.step({ wallS: 1, cpuS: 0.05, records: 5000, folded: 9000, behind: 100 }).limit, 2500);
    assert.equal(ctl.step({ wallS: 1, cpuS: 0.05, records: 2500, folded: 9000, behind: 0 }).limit, 5000, 'caught up: grows again');
  });

  it('refuses a budget of nothing', () => {
    assert.throws(() => createBudgetController({ budgetCores: 0, cpus: 1 }), /above 0/);
  });
});
