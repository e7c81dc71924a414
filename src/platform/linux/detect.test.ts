import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parseKernelVersion, kernelAtLeast } from '../capabilities.js';
import { detectLinux, effectiveCapabilities } from './detect.js';

describe('linux host detection', () => {
  it('names effective capabilities from /proc/self/status', () => {
    assert.deepEqual(effectiveCapabilities('Name:\tx\nCapEff:\t0000000000003000\n'), ['CAP_NET_ADMIN', 'CAP_NET_RAW']);
    assert.deepEqual(effectiveCapabilities('CapEff:\t000001fffeffffff\n').filter((c) => ['CAP_BPF', 'CAP_SYS_RESOURCE'].includes(c)), ['CAP_BPF']);
    assert.deepEqual(effectiveCapabilities('no caps line'), []);
  });

  it('parses kernel releases', () => {
    assert.deepEqual(parseKernelVersion('6.18.44-fc-v595'), [6, 18, 44]);
    assert.deepEqual(parseKernelVersion('5.15.0-1064-azure'), [5, 15, 0]);
    assert.deepEqual(parseKernelVersion('6.6'), [6, 6, 0]);
    assert.ok(kernelAtLeast([6, 6, 0], 6, 6));
    assert.ok(!kernelAtLeast([5, 19, 9], 6, 6));
  });

  it('sees this host as it is (the test machine runs as root with BTF)', () => {
    const info = detectLinux();
    assert.equal(info.os, 'linux');
    assert.equal(info.kernelRelease, readFileSync('/proc/sys/kernel/osrelease', 'utf8').trim());
    assert.ok(info.btf, 'these machines have kernel BTF: /sys/kernel/btf/vmlinux');
    assert.ok(info.hasTracepoint('skb/kfree_skb'), 'skb/kfree_skb must be found (tracefs or BTF)');
    assert.ok(info.hasTracepoint('tcp/tcp_retransmit_skb'));
    assert.ok(!info.hasTracepoint('nosuch/not_a_tracepoint_at_all'));
    assert.ok(info.capabilities.includes('CAP_NET_ADMIN'), 'tests run as root');
    assert.ok(info.hasFile('/proc/net/netstat'));
  });
});
