import assert from 'node:assert/strict';
import { it } from 'node:test';
import { detectWindows } from './detect.js';
import { osSections, summarisePolicies } from './diagnose.js';

it('the Windows sections are hns, vfp, hns-vfp, interfaces and etw; building them opens no DLL', () => {
  assert.deepEqual(osSections(detectWindows()).map((s) => s.name), ['hns', 'vfp', 'hns-vfp', 'interfaces', 'etw']);
});

it('policies are summarised by type, in first-seen order, with counts', () => {
  assert.equal(summarisePolicies([{ Type: 'ACL' }, { Type: 'OutBoundNAT' }, { Type: 'ACL' }, {}, 'x']), 'ACL x2, OutBoundNAT, unknown x2');
  assert.equal(summarisePolicies([]), undefined);
  assert.equal(summarisePolicies(null), undefined);
});
