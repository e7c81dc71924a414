import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Logger } from '../log/index.js';
import { SLICES_NOT_WRITTEN, checkSlicesWritten } from './agent-watch.js';
import type { Clock } from './clock.js';
import { ApiError, type RestClient } from './rest.js';

/** A clock whose timers run when the test says. */
function manualClock(): Clock & { fire(): void; pending(): number } {
  let timers: (() => void)[] = [];
  return {
    now: () => 0,
    setTimeout(fn) {
      timers.push(fn);
      return { [Symbol.dispose]: () => void (timers = timers.filter((t) => t !== fn)) };
    },
    fire() {
      const due = timers;
      timers = [];
      for (const t of due) t();
    },
    pending: () => timers.length,
  };
}

function recorder(): { log: Logger; lines: { level: string; msg: string }[] } {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (msg: string): void => void lines.push({ level, msg });
  const log: Logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: () => log };
  return { log, lines };
}

/** What the fake API server answers to the RetinaEndpoints LIST, and the paths it was asked. */
function fakeClient(answer: () => unknown[] | Error): RestClient & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async request<T>(method: string, path: string, opts?: { query?: Record<string, unknown> }): Promise<T> {
      asked.push(`${method} ${path}?limit=${String(opts?.query?.['limit'])}`);
      const a = answer();
      if (a instanceof Error) throw a;
      return { items: a } as T;
    },
  } as unknown as RestClient & { asked: string[] };
}

const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('checkSlicesWritten: an agent reading slices the operator does not write', () => {
  it('warns once, naming the setting, while RetinaEndpoints exist and no slice does; says so when slices come; warns again if they go', async () => {
    const clock = manualClock();
    const { log, lines } = recorder();
    let slices = 0;
    const client = fakeClient(() => [{}]);
    using _ = checkSlicesWritten({ client, slices: { waitForSync: async () => undefined, stats: () => ({ size: slices }) as never }, log, clock, everyMs: 1000 });
    await settle();
    await settle();
    assert.deepEqual(client.asked, ['GET /apis/retina.sh/v1alpha1/retinaendpoints?limit=1'], 'one RetinaEndpoint asked for, cluster-wide');
    assert.deepEqual(lines.filter((l) => l.level === 'warn').map((l) => l.msg), [SLICES_NOT_WRITTEN]);
    clock.fire();
    await settle();
    await settle();
    assert.equal(lines.filter((l) => l.level === 'warn').length, 1, 'once a spell');
    slices = 3;
    clock.fire();
    await settle();
    assert.equal(client.asked.length, 2, 'no request while slices exist');
    assert.deepEqual(lines.filter((l) => l.level === 'info').map((l) => l.msg), ['RetinaEndpointSlices exist now: pods are known again']);
    slices = 0;
    clock.fire();
    await settle();
    await settle();
    assert.equal(lines.filter((l) => l.level === 'warn').length, 2);
  });

  it('says nothing when there are no RetinaEndpoints either, and asks nothing while slices exist', async () => {
    const clock = manualClock();
    const { log, lines } = recorder();
    const none = fakeClient(() => []);
    using _a = checkSlicesWritten({ client: none, slices: { waitForSync: async () => undefined, stats: () => ({ size: 0 }) as never }, log, clock, everyMs: 1000 });
    const some = fakeClient(() => [{}]);
    using _b = checkSlicesWritten({ client: some, slices: { waitForSync: async () => undefined, stats: () => ({ size: 1 }) as never }, log, clock, everyMs: 1000 });
    await settle();
    await settle();
    clock.fire();
    await settle();
    await settle();
    assert.equal(none.asked.length, 2);
    assert.equal(some.asked.length, 0);
    assert.deepEqual(lines, []);
  });

  it('stops looking when RetinaEndpoints may not be listed (403), and at dispose', async () => {
    const clock = manualClock();
    const { log, lines } = recorder();
    const forbidden = fakeClient(() => new ApiError(403, 'Forbidden', 'retinaendpoints.retina.sh is forbidden'));
    using _ = checkSlicesWritten({ client: forbidden, slices: { waitForSync: async () => undefined, stats: () => ({ size: 0 }) as never }, log, clock, everyMs: 1000 });
    await settle();
    await settle();
    assert.equal(clock.pending(), 0, 'no next look');
    assert.deepEqual(lines.map((l) => l.level), ['debug']);
    const ok = fakeClient(() => [{}]);
    const c = checkSlicesWritten({ client: ok, slices: { waitForSync: async () => undefined, stats: () => ({ size: 0 }) as never }, log, clock, everyMs: 1000 });
    await settle();
    await settle();
    c[Symbol.dispose]();
    assert.equal(clock.pending(), 0, 'disposed: no timer left');
  });
});
