/**
 * Fuzzing kubeconfig loading (src/k8s/kubeconfig.ts): files built from kubeconfig's shape with
 * fields of the wrong type, missing entries and references to files that are not there, then mutated.
 * Loading gives a REST config with a server, or rejects with a KubeconfigError; never a TypeError.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { KubeconfigError, loadRestConfig } from '../../src/k8s/kubeconfig.js';
import { fc, fuzzer, mutated, onlyThrows } from './harness.js';

const fuzz = fuzzer(import.meta.url);

const odd: fc.Arbitrary<unknown> = fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.constant(null), fc.boolean(), fc.constant([]), fc.constant({}), fc.constant([null]));
const or = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<unknown> => fc.oneof({ arbitrary: a, weight: 4 }, { arbitrary: odd, weight: 1 });
const name = fc.constantFrom('a', 'b');

const docArb = fc.record({
  'current-context': or(name),
  contexts: or(fc.array(or(fc.record({ name: or(name), context: or(fc.record({ cluster: or(name), user: or(name) }, { requiredKeys: [] })) }, { requiredKeys: [] })), { maxLength: 2 })),
  clusters: or(fc.array(or(fc.record({ name: or(name), cluster: or(fc.record({
    server: or(fc.constantFrom('https://127.0.0.1:6443', 'https://[::1]:6443/', 'http://x')), 'certificate-authority': or(fc.constantFrom('ca.pem', '/nonexistent/ca.pem')),
    'certificate-authority-data': or(fc.constantFrom('bm90IGEgY2VydA==', '%%%')), 'insecure-skip-tls-verify': or(fc.boolean()),
  }, { requiredKeys: [] })) }, { requiredKeys: [] })), { maxLength: 2 })),
  users: or(fc.array(or(fc.record({ name: or(name), user: or(fc.record({
    token: or(fc.string({ maxLength: 8 })), 'client-certificate': or(fc.constantFrom('crt.pem')), 'client-key-data': or(fc.constant('a2V5')),
  }, { requiredKeys: [] })) }, { requiredKeys: [] })), { maxLength: 2 })),
}, { requiredKeys: [] });

const textArb = fc.oneof({ arbitrary: docArb.map((d) => stringify(d)), weight: 3 }, { arbitrary: mutated(docArb.map((d) => new Uint8Array(Buffer.from(stringify(d))))).map((b) => Buffer.from(b).toString('utf8')), weight: 1 });

fuzz('kubeconfig', textArb, async (text) => {
  const dir = mkdtempSync(join(tmpdir(), 'retina-fuzz-kubeconfig-'));
  const path = join(dir, 'config');
  writeFileSync(path, text);
  let r: { ok: true; value: unknown } | { ok: false; error: Error };
  try {
    r = { ok: true, value: await loadRestConfig({ kubeconfig: path, env: {}, prefer: 'light' }) };
  } catch (e) {
    r = onlyThrows([KubeconfigError], () => {
      throw e;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  if (r.ok) assert.equal(typeof (r.value as { server: unknown }).server, 'string');
  else assert.ok(r.error.message.includes(path), `the error does not name the file: ${r.error.message}`);
}, { weight: 0.5 });
