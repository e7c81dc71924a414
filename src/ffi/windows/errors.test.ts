import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { WindowsCallError, checkHresult, checkWin32, hresultHex, recordMessage, win32OfHresult } from './errors.js';
import { parseGuid } from './guid.js';

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
  assert.deepEqual(parseGuid('{8f1c2b3a-1d2e-4f50-91a2-b3c4d5e6f708}'), parseGuid('8F1C2B3A-1D2E-4F50-91A2-B3C4D5E6F708'));
  assert.throws(() => parseGuid('nope'), /not a GUID: "nope"/);
});

const fixtures = new URL('../../../../test/fixtures/windows/', import.meta.url);
/** Microsoft's HCN HRESULT table (test/fixtures/windows/real/hcn-hresults.md): code → description. */
function hcnTable(): Map<number, string> {
  const rows = readFileSync(new URL('real/hcn-hresults.md', fixtures), 'utf8').split('\n').map((l) => /^\|`(\w+)`\|([^|]+)\|`0x([0-9a-f]{8})`\|$/i.exec(l)).filter((m) => m !== null);
  return new Map(rows.map((m) => [parseInt(m[3]!, 16), m[2]!]));
}

it('HCN\'s own "endpoint not found" (0x803B0002, Microsoft\'s HCN table; no public record of that code was found) is notFound; the other real HCN records are not', () => {
  const table = hcnTable();
  assert.equal(table.get(0x803b0002), 'The endpoint was not found');
  const gone = new WindowsCallError('HcnQueryEndpointProperties(x)', 0x803b0002 | 0, 'HRESULT', JSON.stringify({ Success: false, Error: `${table.get(0x803b0002)}. `, ErrorCode: 0x803b0002 }));
  assert.ok(gone.notFound, 'an endpoint deleted during pod churn is gone, not a failure');
  // Real error lines from public threads (hcsshim's "<call> failed in Win32: <text> (<code>) <record>"): the record's ErrorCode is what the call returned.
  const lines = readFileSync(new URL('real/hcn-error-lines.txt', fixtures), 'utf8').trim().split('\n');
  const calls = lines.map((l) => {
    const record = l.slice(l.indexOf('{'));
    return new WindowsCallError(l.slice(0, l.indexOf(' ')), (JSON.parse(record) as { ErrorCode: number }).ErrorCode | 0, 'HRESULT', record);
  });
  assert.deepEqual(calls.map((e) => [hresultHex(e.code), e.notFound]), [['0x803B002F', false], ['0x803B001E', false], ['0x80070490', true]]);
  assert.match(calls[2]!.message, /^hcnOpenNamespace failed: HRESULT 0x80070490: Element not found\. $/);
  // The other HCN "not found" codes name a different object than the endpoint the call opened: a real failure.
  for (const code of [0x803b0001, 0x803b0005, 0x803b0007]) assert.equal(new WindowsCallError('HcnOpenEndpoint', code | 0, 'HRESULT').notFound, false, table.get(code));
});

it('our error-record fixture pairs its text with the code Microsoft\'s HCN table gives that text', () => {
  const doc = JSON.parse(readFileSync(new URL('hcn-error-record.json', fixtures), 'utf8')) as { Error: string; ErrorCode: number };
  const byText = new Map([...hcnTable()].map(([code, text]) => [text, code]));
  assert.equal(hresultHex(doc.ErrorCode), hresultHex(byText.get(doc.Error.replace(/\.\s*$/, '')) ?? -1), doc.Error);
  assert.ok(new WindowsCallError('HcnOpenEndpoint', doc.ErrorCode | 0, 'HRESULT', JSON.stringify(doc)).notFound);
});
