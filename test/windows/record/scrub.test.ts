/** The fixture recorder's scrubbing (record.ts), on Linux: every address and MAC in a JSON string is replaced, consistently; nothing else changes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scrub } from './record.js';

describe('record-fixtures: scrub', () => {
  it('replaces IPv4, IPv6 (with or without a prefix) and MACs in string literals, the same one the same way', () => {
    const doc = '{"IpAddress":"10.240.0.7","Prefix":"10.240.0.0/16","V6":"fd00:240::7","Mac":"00-15-5D-AB-CD-EF","Gw":"10.240.0.7","Name":"ep-10.240.0.7","Packets":18446744073709551615}';
    const out = scrub(doc);
    assert.equal(out, '{"IpAddress":"192.0.2.1","Prefix":"192.0.2.2/16","V6":"2001:db8::3","Mac":"02-00-00-00-00-04","Gw":"192.0.2.1","Name":"ep-10.240.0.7","Packets":18446744073709551615}');
  });
  it('keeps one mapping across documents when the same map is passed', () => {
    const seen = new Map<string, string>();
    assert.equal(scrub('["10.0.0.1"]', seen), '["192.0.2.1"]');
    assert.equal(scrub('{"a":"10.0.0.2","b":"10.0.0.1"}', seen), '{"a":"192.0.2.2","b":"192.0.2.1"}');
  });
  it('leaves escaped quotes and non-address strings alone', () => {
    const doc = '{"Filter":"{\\"State\\":3}","Id":"1000-aaaa"}';
    assert.equal(scrub(doc), doc);
  });
});
