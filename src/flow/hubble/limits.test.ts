import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { checkFilterLimits, DEFAULT_FILTER_LIMITS, FilterError, FilterLimitError, type FilterLimits } from './index.js';

const small: FilterLimits = { maxFilters: 3, maxValues: 6, maxRegexes: 2, maxRegexBytes: 10, maxAddresses: 2 };
const limitOf = (w: unknown, b: unknown, l = small): string | undefined => {
  try {
    checkFilterLimits(w, b, l);
    return undefined;
  } catch (e) {
    assert.ok(e instanceof FilterLimitError && e instanceof FilterError);
    return `${e.limit} @ ${e.field}`;
  }
};

describe('bounds on a client\'s filters', () => {
  it('counts FlowFilters over the whitelist and the blacklist', () => {
    assert.equal(limitOf([{}, {}], [{}]), undefined);
    assert.equal(limitOf([{}, {}], [{}, {}]), 'maxFilters @ whitelist, blacklist');
  });
  it('counts every value of every field, and names where the limit was crossed', () => {
    assert.equal(limitOf([{ source_pod: ['a', 'b', 'c'] }], [{ verdict: ['DROPPED', 'ERROR', 'AUDIT'] }]), undefined);
    assert.equal(limitOf([{ source_pod: ['a', 'b', 'c'] }], [{ verdict: ['DROPPED'], source_label: ['x', 'y', 'z'] }]), 'maxValues @ blacklist[0].source_label');
  });
  it('counts regular expressions and their bytes (UTF-8) over the fields compiled to regexes', () => {
    assert.equal(limitOf([{ http_path: ['a'] }, { source_fqdn: ['b'] }], undefined), undefined);
    assert.equal(limitOf([{ http_path: ['a'] }, { source_fqdn: ['b'], node_name: ['c'] }], undefined), 'maxRegexes @ whitelist[1].node_name');
    assert.equal(limitOf([{ dns_query: ['éééé'] }, { http_url: ['xy'] }], undefined), undefined); // 8 + 2 bytes
    assert.equal(limitOf([{ dns_query: ['éééééé'] }], undefined), 'maxRegexBytes @ whitelist[0].dns_query');
    // Fields that are not regexes do not count as such.
    assert.equal(limitOf([{ source_pod: ['aaaaaaaaaaaaaaaaaaaaaaa'] }], undefined), undefined);
  });
  it('counts IPs and CIDRs of source_ip and destination_ip together', () => {
    assert.equal(limitOf([{ source_ip: ['1.1.1.1'] }], [{ destination_ip: ['10.0.0.0/8'] }]), undefined);
    assert.equal(limitOf([{ source_ip: ['1.1.1.1', '2.2.2.2'] }], [{ destination_ip: ['10.0.0.0/8'] }]), 'maxAddresses @ blacklist[0].destination_ip');
  });
  it('leaves malformed filters to the compiler, and the defaults allow what the hubble CLI sends', () => {
    assert.equal(limitOf('nope', [null, 3]), undefined);
    assert.equal(limitOf([{ source_pod: ['kube-system/'], verdict: ['DROPPED'] }], [{ destination_pod: ['kube-system/coredns'] }], DEFAULT_FILTER_LIMITS), undefined);
  });
});
