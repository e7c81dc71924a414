/**
 * Whether a request asks only for flows a filtered store keeps: covered only when certain, judged on
 * the filters (the same fields with the same values or fewer), never answered "covered" wrongly.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { filterImplies, uncoveredBy } from './filter-cover.js';

test('a filter implies another when it sets every field of it with some of its values', () => {
  assert.ok(filterImplies({ verdict: ['DROPPED'] }, { verdict: ['DROPPED', 'FORWARDED'] }));
  assert.ok(filterImplies({ verdict: ['DROPPED'], source_pod: ['shop/'] }, { verdict: ['DROPPED'] }));
  assert.ok(filterImplies({ verdict: ['DROPPED'] }, {}));
  assert.ok(filterImplies({ verdict: ['DROPPED'] }, { verdict: [], source_pod: undefined }), 'empty fields are unset');
  assert.ok(!filterImplies({ verdict: ['DROPPED', 'FORWARDED'] }, { verdict: ['DROPPED'] }));
  assert.ok(!filterImplies({ source_pod: ['shop/web'] }, { verdict: ['DROPPED'] }));
  // A narrower pod prefix is narrower, but not judged so: "not covered" is the safe answer.
  assert.ok(!filterImplies({ source_pod: ['shop/web'] }, { source_pod: ['shop/'] }));
  assert.ok(filterImplies({ tcp_flags: [{ SYN: true }] }, { tcp_flags: [{ SYN: true }, { RST: true }] }));
  assert.ok(!filterImplies({ experimental: { cel_expression: ['a'] } }, { experimental: { cel_expression: ['b'] } }));
});

test('covered: no kept filters; a request at least as narrow as a kept allow filter and excluding every kept deny filter', () => {
  const all = { allow: [], deny: [] };
  assert.equal(uncoveredBy({ allow: [], deny: [] }, all), undefined);
  assert.equal(uncoveredBy({ allow: [{ verdict: ['DROPPED'] }], deny: [{ source_pod: ['x/'] }] }, all), undefined);
  const drops = { allow: [{ verdict: ['DROPPED'] }, { destination_port: ['53'] }], deny: [{ source_namespace: ['kube-system'] }] };
  assert.equal(uncoveredBy({ allow: [{ verdict: ['DROPPED'], source_pod: ['shop/'] }, { destination_port: ['53'] }], deny: [{ source_namespace: ['kube-system'] }, { reply: [true] }] }, drops), undefined);
  assert.match(uncoveredBy({ allow: [], deny: [{ source_namespace: ['kube-system'] }] }, drops) ?? '', /asks for every flow/);
  assert.match(uncoveredBy({ allow: [{ verdict: ['DROPPED'] }, { source_pod: ['shop/'] }], deny: [{ source_namespace: ['kube-system'] }] }, drops) ?? '', /allow filter 1 .*"source_pod"/);
  assert.match(uncoveredBy({ allow: [{ verdict: ['DROPPED'] }], deny: [] }, drops) ?? '', /deny list matches \(\{"source_namespace":\["kube-system"\]\}\)/);
  // A request deny filter broader than the kept one excludes it too.
  assert.equal(uncoveredBy({ allow: [{ verdict: ['DROPPED'] }], deny: [{ source_namespace: ['kube-system', 'monitoring'] }] }, drops), undefined);
  assert.notEqual(uncoveredBy({ allow: [{ verdict: ['DROPPED'] }], deny: [{ source_namespace: ['kube-system'], reply: [true] }] }, drops), undefined);
});
