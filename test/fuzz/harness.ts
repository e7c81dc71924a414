/**
 * The fuzzing harness: one `fuzz(target, arbitrary, property)` per property, run by node:test.
 *
 * - Bounded run (`make test`): FUZZ_RUNS inputs per property (default 150) from a fixed seed per
 *   target (a hash of its name), so a run reproduces; FUZZ_SEED overrides it.
 * - Long run (`make fuzz`): FUZZ_RUNS large, FUZZ_SEED random, FUZZ_RECORD=1: every shrunk
 *   counterexample is written to test/fuzz/corpus/<target>/<hash>.json.
 * - Every run first replays the corpus of its target, so what a long run found stays a regression case.
 *
 * A failure prints the target, the seed, the path (fast-check's replay point) and the shrunk input.
 * Inputs are JSON-able values plus Uint8Array (written {"$bytes": hex}), bigint ({"$bigint"}) and
 * undefined ({"$undefined": true}), so every corpus file is readable text.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import fc from 'fast-check';

export { fc };

/** test/fuzz/corpus in the source tree (this file runs from dist/test/fuzz). */
const HERE = dirname(fileURLToPath(import.meta.url));
export const CORPUS_DIR = process.env['FUZZ_CORPUS'] ?? resolve(HERE, '../../../test/fuzz/corpus');

const RUNS = Number(process.env['FUZZ_RUNS'] ?? 150);
const RECORD = process.env['FUZZ_RECORD'] === '1';
/** How long one input may take (a parser is synchronous: a hang shows as an input over budget). */
export const INPUT_BUDGET_MS = Number(process.env['FUZZ_INPUT_MS'] ?? 500);

const seedOf = (target: string): number => {
  const env = process.env['FUZZ_SEED'];
  if (env !== undefined && env !== '') return Number(env) | 0;
  return createHash('sha256').update(target).digest().readInt32LE(0);
};

export function serialize(v: unknown): string {
  return JSON.stringify(
    v,
    function (this: Record<string, unknown>, key, value: unknown) {
      const raw = this[key];
      if (raw instanceof Uint8Array) return { $bytes: Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('hex') };
      if (typeof raw === 'bigint') return { $bigint: raw.toString() };
      if (raw === undefined && key !== '') return { $undefined: true };
      return value;
    },
    1,
  );
}

export function deserialize(text: string): unknown {
  return JSON.parse(text, (_k, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const o = value as Record<string, unknown>;
      if (typeof o['$bytes'] === 'string') return new Uint8Array(Buffer.from(o['$bytes'], 'hex'));
      if (typeof o['$bigint'] === 'string') return BigInt(o['$bigint']);
      if (o['$undefined'] === true) return undefined;
    }
    return value;
  });
}

/** The corpus cases of `target` (file name, input). */
export function corpus(target: string): [string, unknown][] {
  const dir = join(CORPUS_DIR, target);
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json')).sort();
  } catch {
    return [];
  }
  return names.map((n) => [n, deserialize(readFileSync(join(dir, n), 'utf8'))]);
}

function record(target: string, input: unknown): string {
  const text = serialize(input);
  const file = join(CORPUS_DIR, target, `${createHash('sha256').update(text).digest('hex').slice(0, 16)}.json`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${text}\n`);
  return file;
}

/**
 * Runs `fn`, failing when it takes more than the per-input budget of this thread's CPU time (not
 * wall time: other work on a busy machine does not count).
 */
export function timed<T>(what: string, fn: () => T): T {
  const t0 = process.threadCpuUsage();
  const r = fn();
  const t = process.threadCpuUsage(t0);
  const ms = (t.user + t.system) / 1000;
  assert.ok(ms <= INPUT_BUDGET_MS, `${what} took ${ms.toFixed(0)} ms of CPU on one input (budget ${INPUT_BUDGET_MS} ms)`);
  return r;
}

/**
 * Asserts that `fn` either returns or throws one of `allowed` (the parser's own typed errors);
 * anything else (a TypeError, a RangeError from a DataView read) fails with the stack.
 */
export function onlyThrows<T>(allowed: readonly (new (...a: never[]) => Error)[], fn: () => T): { ok: true; value: T } | { ok: false; error: Error } {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (allowed.some((c) => e instanceof c && (e.constructor === c || c !== Error))) return { ok: false, error: e as Error };
    throw new Error(`threw ${(e as Error)?.constructor?.name ?? typeof e} instead of ${allowed.map((c) => c.name).join(' or ')}: ${(e as Error)?.stack ?? String(e)}`);
  }
}

export interface FuzzOptions {
  /** Runs of this property relative to FUZZ_RUNS (a costly property runs fewer). */
  readonly weight?: number;
}

/** A property: throws (assert) or rejects to fail. */
type Property<T> = (input: T) => void | Promise<void>;

/** An input still running after this long is a hang: the worker is stopped and the input reported. */
const HANG_MS = Number(process.env['FUZZ_HANG_MS'] ?? 20_000);
/** How long a worker may take to load its test file before the first input (a busy machine). */
const STARTUP_MS = 120_000;
/** The input being run, shared with the watchdog: [sequence, byte length, ...UTF-8 of its JSON]. */
const SHARED_BYTES = 1 << 20;

type Outcome = { ok: true; runs: number } | { ok: false; message: string; input: string | undefined };

async function check<T>(target: string, arb: fc.Arbitrary<T>, property: Property<T>, opts: FuzzOptions, shared: SharedArrayBuffer): Promise<Outcome> {
  const head = new Int32Array(shared, 0, 2);
  const body = new Uint8Array(shared, 8);
  const enc = new TextEncoder();
  const guarded = (x: unknown): void | Promise<void> => {
    const { written } = enc.encodeInto(serialize(x), body);
    Atomics.store(head, 1, written);
    Atomics.add(head, 0, 1);
    return property(x as T);
  };
  for (const [name, input] of corpus(target)) {
    try {
      await guarded(input);
    } catch (e) {
      return { ok: false, message: `corpus case ${target}/${name} fails: ${(e as Error)?.stack ?? String(e)}`, input: undefined };
    }
  }
  const seed = seedOf(target);
  const numRuns = Math.max(1, Math.round(RUNS * (opts.weight ?? 1)));
  const details = await fc.check(fc.asyncProperty(arb, async (x) => void (await guarded(x))), { seed, numRuns });
  if (!details.failed) return { ok: true, runs: details.numRuns };
  const err = details.errorInstance as Error | undefined;
  return {
    ok: false,
    input: details.counterexample ? serialize(details.counterexample[0]) : undefined,
    message: `fuzz ${target} failed (seed ${seed}, path "${details.counterexamplePath ?? ''}", after ${details.numRuns} runs; reproduce with FUZZ_SEED=${seed})\n${err?.stack ?? err?.message ?? ''}`,
  };
}

/** Runs one target in a worker thread, so an input that never returns is stopped and reported. */
async function inWorker(file: string, target: string): Promise<void> {
  const shared = new SharedArrayBuffer(SHARED_BYTES);
  const head = new Int32Array(shared, 0, 2);
  const worker = new Worker(new URL(file), { workerData: { fuzzTarget: target, shared } });
  const outcome = await new Promise<Outcome>((resolve, reject) => {
    let seen = -1;
    let since = performance.now();
    const watchdog = setInterval(() => {
      const seq = Atomics.load(head, 0);
      if (seq !== seen) {
        seen = seq;
        since = performance.now();
      } else if (performance.now() - since > (seq === 0 ? STARTUP_MS : HANG_MS)) {
        clearInterval(watchdog);
        const input = Buffer.from(new Uint8Array(shared, 8, Atomics.load(head, 1))).toString('utf8');
        void worker.terminate();
        resolve({ ok: false, input, message: `fuzz ${target}: one input ran for more than ${HANG_MS} ms (a hang)` });
      }
    }, 100);
    worker.once('message', (m: Outcome) => {
      clearInterval(watchdog);
      resolve(m);
    });
    worker.once('error', (e) => {
      clearInterval(watchdog);
      reject(e);
    });
    worker.once('exit', (code) => {
      clearInterval(watchdog);
      resolve({ ok: false, input: undefined, message: `fuzz ${target}: the worker exited (${code}) without a result` });
    });
  });
  await worker.terminate();
  if (outcome.ok) return;
  const saved = RECORD && outcome.input !== undefined ? `\nkept as ${record(target, deserialize(outcome.input))}` : '';
  throw new Error(`${outcome.message}${saved}${outcome.input !== undefined ? `\ninput: ${outcome.input.slice(0, 4000)}` : ''}`);
}

/**
 * `const fuzz = fuzzer(import.meta.url)` in a test file; then `fuzz(target, arbitrary, property)`
 * declares the node:test test `fuzz <target>`, which replays the target's corpus and checks
 * `property` on FUZZ_RUNS generated inputs in a worker thread running this same file. `property`
 * throws (assert) to fail.
 */
export function fuzzer(file: string): <T>(target: string, arb: fc.Arbitrary<T>, property: Property<T>, opts?: FuzzOptions) => void {
  const data = workerData as { fuzzTarget?: string; shared?: SharedArrayBuffer } | null;
  return (target, arb, property, opts = {}) => {
    if (!isMainThread) {
      if (data?.fuzzTarget === target && data.shared) void check(target, arb, property, opts, data.shared).then((o) => parentPort?.postMessage(o));
      return;
    }
    test(`fuzz ${target}`, () => inWorker(file, target));
  };
}

/** A DataView over exactly these bytes. */
export const view = (b: Uint8Array): DataView => new DataView(b.buffer, b.byteOffset, b.byteLength);

/**
 * The same bytes at `lead` inside a larger buffer filled with `fill` (a ring buffer's neighbouring
 * records): a decoder that reads past its record would see the fill and decode differently.
 */
export function embedded(b: Uint8Array, lead: number, trail: number, fill: number): { v: DataView; off: number } {
  const big = new Uint8Array(lead + b.length + trail).fill(fill);
  big.set(b, lead);
  return { v: new DataView(big.buffer), off: lead };
}

/** Bytes from an arbitrary with up to `max` bytes. */
export const bytes = (max: number, min = 0): fc.Arbitrary<Uint8Array> => fc.uint8Array({ minLength: min, maxLength: max });

/**
 * Mutations of a valid encoding: one byte changed, a cut, bytes inserted or dropped; the same
 * arbitrary also yields the valid encoding itself, so properties see deep, nearly right inputs.
 */
export function mutated(valid: fc.Arbitrary<Uint8Array>): fc.Arbitrary<Uint8Array> {
  return fc.oneof(
    { arbitrary: valid, weight: 2 },
    {
      arbitrary: fc.tuple(valid, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([b, i, x]) => {
        if (b.length === 0) return b;
        const c = Uint8Array.from(b);
        c[i % c.length] = x;
        return c;
      }),
      weight: 4,
    },
    { arbitrary: fc.tuple(valid, fc.nat()).map(([b, n]) => b.subarray(0, b.length ? n % b.length : 0)), weight: 2 },
    {
      arbitrary: fc.tuple(valid, fc.nat(), bytes(8, 1)).map(([b, i, ins]) => {
        const at = b.length ? i % b.length : 0;
        return Uint8Array.from([...b.subarray(0, at), ...ins, ...b.subarray(at)]);
      }),
      weight: 1,
    },
    {
      arbitrary: fc.tuple(valid, fc.nat(), fc.integer({ min: 1, max: 8 })).map(([b, i, n]) => {
        const at = b.length ? i % b.length : 0;
        return Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + n)]);
      }),
      weight: 1,
    },
  );
}
