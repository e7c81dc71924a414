import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ipv4At, ipv6At } from './addr.js';

const dv = (bytes: number[]) => new DataView(Uint8Array.from(bytes).buffer);

test('IPv4 from network-order bytes', () => {
  assert.equal(ipv4At(dv([10, 0, 0, 1]), 0), '10.0.0.1');
});

test('IPv6 compresses the longest zero run and keeps v4-mapped form', () => {
  assert.equal(ipv6At(dv([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]), 0), '2001:db8::1');
  assert.equal(ipv6At(dv(new Array(16).fill(0)), 0), '::');
  assert.equal(ipv6At(dv([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]), 0), '::ffff:192.0.2.1');
  assert.equal(ipv6At(dv([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 2]), 0), 'fe80::1:0:0:2');
});
