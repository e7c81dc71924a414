/** Shared by the Windows suite (runs under node.exe): refuses to run anywhere but Windows/Wine, names the fakes. */
import assert from 'node:assert/strict';

assert.equal(process.platform, 'win32', 'the Windows suite runs under the Windows build of Node.js (test/windows/wine.test.ts starts it under Wine)');

export function env(name: string): string {
  const v = process.env[name];
  assert.ok(v, `${name} is not set: run the suite through test/windows/wine.test.ts (make test-windows)`);
  return v;
}

/** The contents of a Linux file seen through Wine's Z: drive (the oracle for iphlpapi). */
export function linuxPath(p: string): string {
  return `Z:${p.replaceAll('/', '\\')}`;
}
