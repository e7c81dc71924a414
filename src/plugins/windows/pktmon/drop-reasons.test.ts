/**
 * The PktMon drop-reason table did not change by accident: its count, a hash of every line, and
 * entries checked by hand against the public source it came from, microsoft/retina
 * pkg/metrics/types_windows.go (`dropReasons`, read at 532c5aa).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { DROP_REASON_COUNT, dropReasonLines, dropReasonName } from './drop-reasons.js';

describe('PktMon drop-reason table', () => {
  it('has its 403 reasons, unique and ascending by value', () => {
    const values = dropReasonLines().map((l) => Number(l.split(' ')[0]));
    assert.equal(DROP_REASON_COUNT, 403);
    assert.equal(values.length, 403);
    for (let i = 1; i < values.length; i++) assert.ok(values[i]! > values[i - 1]!, `${values[i]} after ${values[i - 1]}`);
  });

  it('every line is unchanged (a deliberate change updates this hash)', () => {
    const text = dropReasonLines().map((l) => `${l}\n`).join('');
    assert.equal(createHash('sha256').update(text).digest('hex'), 'b28fd08837f30bd2da5382732b863eedd2146ace30a18d33477aaecb0a59fdb7');
  });

  it("names values as Retina's types_windows.go does", () => {
    const retina: readonly [number, string][] = [
      [0, 'Drop_Unknown'], [1, 'Drop_InvalidData'], [38, 'Drop_LowPower'], [228, 'Drop_SteeringMismatch'], [404, 'Drop_VMBusError'],
      [615, 'Drop_FL_FlsNpiClientDrop'], [719, 'Drop_NicSuspended'], [912, 'Drop_NL_BadChecksum'], [1002, 'Drop_NL_SwUsoFailure'],
      [1210, 'Drop_INET_Rst'], [1232, 'Drop_INET_AcceptRedirection'], [1317, 'Drop_SlbMux_NATItselfCantBeInternalNexthop'],
      [1327, 'Drop_SlbMux_UnableToHandleRedirect'], [1418, 'Drop_Ipsec_Unsuccessful'], [1507, 'Drop_NetCx_BufferBounceFailureAndPacketIgnore'],
      [3030, 'Drop_Http_UlError_End'], [3463, 'Drop_Http_UxDuoFaultEnd'], [3600, 'Drop_Http_ReceiveSuppressed'],
      [3814, 'Drop_Http_TimeDifferenceAtDc'], [4000, 'Drop_Http_End'],
    ];
    for (const [v, name] of retina) assert.equal(dropReasonName(v), name, String(v));
    // Gaps in Retina's table read as unknown, as Retina prints them.
    for (const v of [39, 224, 1233, 1300, 3999]) assert.equal(dropReasonName(v), `UnknownDropReason(${v})`);
  });
});
