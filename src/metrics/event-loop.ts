/**
 * nodejs_eventloop_lag_{min,max,mean,stddev,p50,p90,p99}_seconds (prom-client's names and help) from
 * one timer that fires every `sampleMs` and records how late it fired, in a histogram that each scrape
 * reads and empties: each sample is a timer wake-up, and prom-client's own monitor (10 ms) woke an
 * idle agent 100 times a second. A scrape that comes before a new sample keeps the previous values;
 * prom-client's would report NaN and a 9.2e9 s minimum. Not `monitorEventLoopDelay`: it records the
 * time between two firings (so every sample holds the period itself: an idle agent sampling every
 * 10 s showed a 10 s lag), and its reset() forgets the last firing, so with scrapes as frequent as
 * samples the one sample after each scrape, the one that held a stall, was dropped.
 */
import { createHistogram } from 'node:perf_hooks';
import { Gauge, type Registry } from './prom.js';

type Delays = ReturnType<typeof createHistogram>;

/** Each stat in ns. */
const STATS: readonly [name: string, help: string, read: (h: Delays) => number][] = [
  ['min', 'The minimum recorded event loop delay.', (h) => h.min],
  ['max', 'The maximum recorded event loop delay.', (h) => h.max],
  ['mean', 'The mean of the recorded event loop delays.', (h) => h.mean],
  ['stddev', 'The standard deviation of the recorded event loop delays.', (h) => h.stddev],
  ['p50', 'The 50th percentile of the recorded event loop delays.', (h) => h.percentile(50)],
  ['p90', 'The 90th percentile of the recorded event loop delays.', (h) => h.percentile(90)],
  ['p99', 'The 99th percentile of the recorded event loop delays.', (h) => h.percentile(99)],
];

/** The names this module registers (prom-client's default metrics register the same ones). */
export const EVENT_LOOP_LAG_STATS = STATS.map(([name]) => `nodejs_eventloop_lag_${name}_seconds`);

/**
 * Registers the gauges on `registry`; the sampler runs for the life of the process, like
 * prom-client's monitor (an unref'd timer: it never keeps the process alive).
 */
export function registerEventLoopLag(registry: Registry, sampleMs: number): void {
  const delays = createHistogram();
  let due = performance.now() + sampleMs;
  const sample = (): void => {
    const now = performance.now();
    // The histogram takes integers from 1 (ns): a timer on time records 1 ns.
    delays.record(Math.max(1, Math.round((now - due) * 1e6)));
    due = now + sampleMs;
    setTimeout(sample, sampleMs).unref();
  };
  setTimeout(sample, sampleMs).unref();
  // The first gauge's collect (run first at each scrape) sets them all from the samples since the last.
  const collect = (): void => {
    if (delays.count === 0) return;
    STATS.forEach(([, , read], i) => gauges[i]?.set(read(delays) / 1e9));
    delays.reset();
  };
  const gauges: Gauge[] = STATS.map(([name, help], i) =>
    new Gauge({ name: `nodejs_eventloop_lag_${name}_seconds`, help, registers: [registry], ...(i === 0 ? { collect } : {}) }));
}
