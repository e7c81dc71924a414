/**
 * Fuzzing configuration loading (src/config): YAML files (built from the declared keys with odd
 * values, then mutated) and RETINA_* environment variables, for the agent's and the operator's keys.
 * A load either gives values every component can use as they are (integers within their range,
 * durations a timer accepts) or throws ConfigErrors naming each bad key; never another error.
 * Durations round-trip through formatDurationMs and parseDurationMs.
 */
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { ConfigErrors, agentKeys, collectSpecs, formatDurationMs, loadValues, parseDurationMs, type ConfigSpec, type KeySpec } from '../../src/config/index.js';
import { operatorKeys } from '../../src/operator/config.js';
import { fc, fuzzer, mutated, onlyThrows, timed } from './harness.js';

const fuzz = fuzzer(import.meta.url);

/** The largest delay setTimeout/setInterval accept (a larger one fires after 1 ms, in a loop). */
const TIMER_MAX_MS = 2 ** 31 - 1;

const agent = agentKeys({ os: 'linux', names: ['packetparser', 'dropreason', 'linuxutil', 'dns'], defaults: ['linuxutil'] });
const operator = operatorKeys();
const SETS: readonly { name: string; keys: Record<string, KeySpec<unknown>> }[] = [
  { name: 'agent', keys: agent as unknown as Record<string, KeySpec<unknown>> },
  { name: 'operator', keys: operator as unknown as Record<string, KeySpec<unknown>> },
];
/** Keys whose value is a duration in ms (timers), by their default's text. */
const isDurationKey = (s: KeySpec<unknown>): boolean => typeof s.default === 'number' && /(ms|s|m|h)$/.test(s.defaultText) || s.key === 'metricsInterval';

const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom('', ' ', '0', '-1', '1e3', '0x10', '10s', '1m30s', '500ms', '100000000h', '99999999999999999999', '1'.padEnd(400, '0'), 'true', 'False', 'debug',
    'packetparser', 'packetparser,dns', '[dns, linuxutil]', '[', ']', 'null', '~', '*', '&a', '!!binary AAAA', '2562047h', '596h', '597h', '.5s', '1.5h', 'µs'),
  fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.maxSafeNat(),
  fc.array(fc.oneof(fc.string({ maxLength: 12 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), { maxKeys: 2 }),
  fc.string({ maxLength: 20 }),
);

/** A document setting some declared keys (nested at their dots) and a few unknown ones. */
function docArb(keys: readonly string[]): fc.Arbitrary<Record<string, unknown>> {
  return fc.tuple(fc.subarray([...keys]), fc.array(oddValue, { minLength: keys.length, maxLength: keys.length }), fc.dictionary(fc.string({ maxLength: 10 }), oddValue, { maxKeys: 2 }))
    .map(([chosen, values, extra]) => {
      const doc: Record<string, unknown> = { ...extra };
      chosen.forEach((k, i) => {
        const parts = k.split('.');
        let o = doc;
        for (const p of parts.slice(0, -1)) o = (o[p] = typeof o[p] === 'object' && o[p] !== null ? o[p] : {}) as Record<string, unknown>;
        o[parts[parts.length - 1] as string] = values[i];
      });
      return doc;
    });
}

const envArb = (keys: readonly string[]): fc.Arbitrary<Record<string, string>> =>
  fc.dictionary(fc.oneof(fc.constantFrom(...keys.map((k) => `RETINA_${k.replace(/\./g, '_').toUpperCase()}`)), fc.string({ maxLength: 12 }).map((s) => `RETINA_${s}`)),
    oddValue.map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? '')), { maxKeys: 3 });

/** Checks a load: usable values, or ConfigErrors naming declared keys. */
function checkLoad(set: (typeof SETS)[number], fileText: string | undefined, env: Record<string, string>): void {
  const specs = collectSpecs(set.keys as ConfigSpec<object>);
  const r = timed('loadValues', () => onlyThrows([ConfigErrors], () => loadValues({ fileText, env, specs })));
  if (!r.ok) {
    const errs = (r.error as ConfigErrors).errors;
    assert.ok(errs.length > 0, 'ConfigErrors without an error');
    for (const e of errs) {
      assert.ok(e.key === '(file)' || specs.some((s) => s.key === e.key), `error names an undeclared key ${e.key}`);
      assert.ok(e.message.includes(e.key), 'the message does not name the key');
    }
    return;
  }
  for (const s of specs) {
    const v: unknown = r.value.get(s);
    if (typeof s.default === 'number') assert.ok(Number.isSafeInteger(v), `${s.key} = ${String(v)} is not a safe integer`);
    if (isDurationKey(s)) assert.ok((v as number) >= 0 && (v as number) <= TIMER_MAX_MS, `${s.key} = ${String(v)} ms is beyond what a timer accepts`);
    if (typeof s.default === 'boolean') assert.equal(typeof v, 'boolean');
    if (typeof s.default === 'string') assert.equal(typeof v, 'string');
    if (Array.isArray(s.default)) assert.ok(Array.isArray(v) && v.every((x) => typeof x === 'string' && x !== ''), `${s.key}: not a list of strings`);
  }
}

for (const set of SETS) {
  const keys = Object.values(set.keys).map((s) => s.key);
  const yamlText = docArb(keys).map((d) => stringify(d));
  fuzz(`config-${set.name}-yaml`, fc.tuple(yamlText, envArb(keys)), ([text, env]) => checkLoad(set, text, env));
  fuzz(`config-${set.name}-yaml-mutated`, mutated(yamlText.map((t) => new Uint8Array(Buffer.from(t)))), (b) => checkLoad(set, Buffer.from(b).toString('utf8'), {}), { weight: 0.5 });
}

fuzz('config-duration-roundtrip', fc.oneof(fc.integer({ min: 0, max: TIMER_MAX_MS }), fc.nat({ max: 1000 }).map((n) => n * 3_600_000)), (ms) => {
  assert.equal(parseDurationMs(formatDurationMs(ms)), ms);
});

/** Go-style compound durations: the parts add up. */
fuzz('config-duration-compound', fc.record({ h: fc.nat(500), m: fc.nat(59), s: fc.nat(59), ms: fc.nat(999) }), ({ h, m, s, ms }) => {
  const text = `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${s ? `${s}s` : ''}${ms ? `${ms}ms` : ''}` || '0';
  assert.equal(timed('parseDurationMs', () => parseDurationMs(text)), ((h * 60 + m) * 60 + s) * 1000 + ms);
});
