import assert from 'node:assert/strict';
import { it } from 'node:test';
import { WindowsCallError, checkHresult, checkWin32, hresultHex, recordMessage, win32OfHresult } from './errors.js';
import { normalizeGuid, parseGuid } from './guid.js';

it('HRESULTs carry Win32 errors; error records and codes end up in the message', () => {
  const notFound = 0x80070490 | 0; // as koffi returns int32_t
  assert.equal(hresultHex(notFound), '0x80070490');
  assert.equal(win32OfHresult(notFound), 1168);
  assert.equal(win32OfHresult(0x803b0001 | 0), undefined);
  assert.throws(() => checkHresult('HcnOpenEndpoint(x)', notFound, '{"Error":"gone","ErrorCode":1}'), (e: unknown) =>
    e instanceof WindowsCallError && e.notFound && e.message === 'HcnOpenEndpoint(x) failed: HRESULT 0x80070490: gone');
  // hcsshim: a non-empty error record is a failure even with a success HRESULT
  assert.throws(() => checkHresult('HcnEnumerateEndpoints', 0, 'plain text'), /HcnEnumerateEndpoints failed: HRESULT 0x00000000: plain text/);
  assert.doesNotThrow(() => checkHresult('x', 0, ''));
  assert.throws(() => checkWin32('GetIfTable2', 8), /GetIfTable2 failed: Win32 error 8/);
  assert.equal(recordMessage('{"ErrorMessage":"m","Error":"e"}'), 'm');
});

it('GUIDs parse in Windows field order and compare case-insensitively', () => {
  assert.deepEqual(parseGuid('8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708'), { Data1: 0x8f1c2b3a, Data2: 0x1d2e, Data3: 0x4f50, Data4: [0x91, 0xa2, 0xb3, 0xc4, 0xd5, 0xe6, 0xf7, 0x08] });
  assert.equal(normalizeGuid('{8f1c2b3a-1d2e-4f50-91a2-b3c4d5e6f708}'), '8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708');
  assert.throws(() => parseGuid('nope'), /not a GUID: "nope"/);
});
