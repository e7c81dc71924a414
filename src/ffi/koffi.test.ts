import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { loadKoffiNative } from './koffi.js';

const koffiVersion = (createRequire(import.meta.url)('koffi/package.json') as { version: string }).version;

test("koffi's native module is loaded from the koffi package, at the package's version", () => {
  const k = loadKoffiNative<{ version: string; load: unknown; struct: unknown; handle?: unknown }>();
  assert.equal(k.version, koffiVersion);
  assert.equal(typeof k.load, 'function');
  assert.equal(typeof k.struct, 'function');
  // koffi's entry point adds deprecated aliases; the native module alone has none.
  assert.equal(k.handle, undefined);
});

test("without a native module for the triplet, koffi's own entry point is used", () => {
  const k = loadKoffiNative<{ version: string; handle?: unknown }>('no-such-arch');
  assert.equal(k.version, koffiVersion);
  assert.equal(typeof k.handle, 'function');
});

test("loading koffi this way loads none of the modules koffi's entry point requires (node:crypto, node:https, node:zlib)", () => {
  const url = new URL('./koffi.js', import.meta.url).href;
  const script = `const { loadKoffiNative } = await import(${JSON.stringify(url)}); loadKoffiNative();
    console.log(JSON.stringify(process.moduleLoadList.filter((m) => /^NativeModule (crypto|https|zlib)$/.test(m))));`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as string[];
  assert.deepEqual(loaded, []);
});
