import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { it } from 'node:test';
import { nativeEtwPath, parseRecords, NATIVE_ETW_ENV, NATIVE_ETW_FILE } from './etw-native.js';

/** Records as retina_etw.c writes them: u16 dataLength | u16 id | u8 version | u8 kind | u16 cpu | i64 timestamp | data, padded to 16. */
function records(list: Array<{ id: number; version: number; timestamp: bigint; data: Buffer }>): Buffer {
  const parts = list.map((r) => {
    const b = Buffer.alloc((16 + r.data.length + 15) & ~15);
    b.writeUInt16LE(r.data.length, 0);
    b.writeUInt16LE(r.id, 2);
    b.writeUInt8(r.version, 4);
    b.writeUInt16LE(3, 6);
    b.writeBigInt64LE(r.timestamp, 8);
    r.data.copy(b, 16);
    return b;
  });
  return Buffer.concat(parts);
}

it('parseRecords reads the native ring\'s records (16-byte head, data padded to 16) into EtwEvents', () => {
  const list = [
    { id: 160, version: 0, timestamp: 133_000_000_000_000_000n, data: Buffer.from('0102030405', 'hex') },
    { id: 170, version: 1, timestamp: -1n, data: Buffer.alloc(0) },
    { id: 160, version: 2, timestamp: 7n, data: Buffer.alloc(34, 0xab) },
  ];
  // at a non-zero offset of a larger ArrayBuffer, as Buffer.from's pool hands them out
  const bytes = Buffer.concat([Buffer.alloc(48), records(list)]).subarray(48);
  const got = parseRecords(bytes);
  assert.deepEqual(got.map((e) => ({ ...e, data: e.data.toString('hex') })), list.map((e) => ({ ...e, data: e.data.toString('hex') })));
  assert.equal(parseRecords(Buffer.alloc(0)).length, 0);
});

it('nativeEtwPath finds native-windows/retina-etw.dll in the first folder above that has it, or the override when it exists', () => {
  const root = mkdtempSync(join(tmpdir(), 'retina-etw-'));
  try {
    const deep = join(root, 'dist', 'src', 'ffi', 'windows');
    mkdirSync(deep, { recursive: true });
    const none = nativeEtwPath({}, deep);
    assert.ok(!none || !none.startsWith(root), 'none under the temp folder yet');
    mkdirSync(join(root, 'native-windows'));
    writeFileSync(join(root, NATIVE_ETW_FILE), 'MZ');
    assert.equal(nativeEtwPath({}, deep), join(root, NATIVE_ETW_FILE));
    assert.equal(nativeEtwPath({ [NATIVE_ETW_ENV]: join(root, 'missing.dll') }, deep), undefined);
    assert.equal(nativeEtwPath({ [NATIVE_ETW_ENV]: join(root, NATIVE_ETW_FILE) }, '/'), join(root, NATIVE_ETW_FILE));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
