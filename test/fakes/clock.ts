import type { Clock } from '../../src/k8s/index.js';

/** A clock that moves only when told to. */
export function fakeClock(): Clock & { advance(ms: number): void } {
  let now = 0;
  const timers: { at: number; fn: () => void; live: boolean }[] = [];
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const t = { at: now + ms, fn, live: true };
      timers.push(t);
      return { [Symbol.dispose]: () => void (t.live = false) };
    },
    advance(ms) {
      now += ms;
      for (const t of timers.filter((x) => x.live && x.at <= now).sort((a, b) => a.at - b.at)) {
        t.live = false;
        t.fn();
      }
    },
  };
}

