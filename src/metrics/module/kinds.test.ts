import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as c from '../catalog.js';
import { KINDS, NOT_FROM_FLOWS, OP_BYTES, OP_DNS_REQUEST, OP_DNS_RESPONSE, OP_DROP_BYTES, OP_DROP_PACKETS, OP_FLAGS, OP_PACKETS } from './kinds.js';

describe('one catalog of advanced metrics', () => {
  it('every adv_* family of the catalog is counted from flows or filled by the API-server module', () => {
    const adv = c.allMetrics.filter((d) => d.name.startsWith('networkobservability_adv_'));
    const counted = new Set(Object.values(KINDS).map((k) => k.def));
    for (const d of adv) assert.ok(counted.has(d) !== NOT_FROM_FLOWS.has(d), `${d.name}: counted from flows xor not from flows`);
    // and each one a metricName can turn on
    const reachable = new Set(Object.values(c.advancedFamilies).flat());
    for (const d of adv) assert.ok(reachable.has(d), `${d.name} is in advancedFamilies`);
  });

  it('the kinds are derived from advancedFamilies: a name counts exactly the family the catalog gives it', () => {
    for (const name of c.advancedMetricNames) {
      const kind = KINDS[name];
      const fams = c.advancedFamilies[name];
      if (kind) assert.deepEqual(fams, [kind.def], name);
      else assert.ok(fams.length === 0 || fams.every((d) => NOT_FROM_FLOWS.has(d)), name);
    }
    for (const name of Object.keys(KINDS)) assert.ok((c.advancedMetricNames as readonly string[]).includes(name), name);
  });

  it('what each metricName counts (the table the module had before it was derived)', () => {
    const got = Object.fromEntries(Object.entries(KINDS).map(([n, k]) => [n, [k.def.name, k.verdict, k.op, k.directional]]));
    const adv = (s: string): string => `networkobservability_adv_${s}`;
    assert.deepEqual(got, {
      forward_count: [adv('forward_count'), 'FORWARDED', OP_PACKETS, true],
      forward_bytes: [adv('forward_bytes'), 'FORWARDED', OP_BYTES, true],
      drop_count: [adv('drop_count'), 'DROPPED', OP_DROP_PACKETS, true],
      drop_bytes: [adv('drop_bytes'), 'DROPPED', OP_DROP_BYTES, true],
      tcp_flag_gauges: [adv('tcpflags_count'), 'FORWARDED', OP_FLAGS, false],
      tcp_retransmission_count: [adv('tcpretrans_count'), 'RETRANSMISSION', OP_PACKETS, true],
      dns_request_count: [adv('dns_request_count'), 'DNS', OP_DNS_REQUEST, false],
      dns_response_count: [adv('dns_response_count'), 'DNS', OP_DNS_RESPONSE, false],
    });
  });
});
