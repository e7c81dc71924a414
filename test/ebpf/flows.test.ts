/**
 * Pod-level records on a real kernel (enablePodLevel): one DNS query over loopback to a port where
 * nothing listens gives a DNS flow (query, type) from dns and a DROPPED flow with reason NO_SOCKET
 * from dropreason, each handed on as a batch.
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { test } from 'node:test';
import type { Flow } from '../../src/flow/index.js';
import { runDns } from '../../src/plugins/linux/dns/index.js';
import { dnsQuery } from '../../src/plugins/linux/dns/fixtures.js';
import { dropreason } from '../../src/plugins/linux/dropreason/index.js';
import { fakeContext } from './fake-context.js';
import { requireKernel, sleep } from './netns.js';

async function sendQuery(name: string): Promise<void> {
  const s = createSocket('udp4');
  s.on('error', () => undefined);
  await new Promise<void>((r) => s.send(dnsQuery(0x4242, name), 53, '127.0.0.1', () => r()));
  await sleep(50);
  s.close();
}

/** max_entries (bytes) of every BPF ring buffer this process holds an fd of. */
function ringSizes(): number[] {
  const sizes: number[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      if (readlinkSync(`/proc/self/fd/${fd}`) !== 'anon_inode:bpf-map') continue;
      const info = readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
      if (/^map_type:\s+27$/m.test(info)) sizes.push(Number(/^max_entries:\s+(\d+)$/m.exec(info)?.[1]));
    } catch {
      continue;
    }
  }
  return sizes.sort((a, b) => a - b);
}

async function until(pred: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!pred() && Date.now() < deadline) await sleep(50);
}

test('a DNS query to a closed loopback port: a DNS flow and a NO_SOCKET drop flow', async () => {
  requireKernel();
  const d = fakeContext({ dnsRingBufferSize: 1 << 16, tcMode: 'auto' as const }, { enablePodLevel: true });
  const r = fakeContext({ dropReasonNames: 'kernel' as const, dropReasonRingBufferSize: 1 << 16, dropReasonFallback: 'auto' as const }, { enablePodLevel: true });
  await using _dns = await runDns(d.ctx, { interfaces: () => false }); // the machine's namespace: no tc program on its interfaces (lo's query arrives at the socket)
  await using _drop = await dropreason.start(r.ctx);
  const name = `rtbpf-${process.pid}.flows.test`;
  await sendQuery(name);
  const dnsFlows = (): Flow[] => d.got.batches.flatMap((b) => b.flows).filter((f) => f.dns?.query === `${name}.`);
  const drops = (): Flow[] => r.got.batches.flatMap((b) => b.flows).filter((f) => f.dropReason === 'NO_SOCKET' && f.dstPort === 53 && f.dstIp === '127.0.0.1');
  await until(() => dnsFlows().length > 0 && drops().length > 0);
  const [q] = dnsFlows();
  assert.equal(dnsFlows().length, 1, 'loopback: counted once');
  assert.deepEqual([q?.verdict, q?.dns?.qtype, q?.dns?.isResponse, q?.direction, q?.dstPort, q?.proto], ['DNS', 'A', false, 'EGRESS', 53, 17]);
  assert.ok(d.got.batches.every((b) => b.source === 'dns' && b.flows.length > 0));
  const [x] = drops();
  assert.deepEqual([x?.verdict, x?.direction, x?.proto, x?.srcIp], ['DROPPED', 'INGRESS', 17, '127.0.0.1']);
  const req = await d.got.metrics.registry.getSingleMetricAsString('networkobservability_dns_request_count');
  assert.match(req, /networkobservability_dns_request_count [1-9]/);
});

test('dropreason sizes its pod-level ring by dropReasonRingBufferSize, not packetparser\'s packetParserRingBufferSize', async () => {
  requireKernel();
  const before = ringSizes();
  const r = fakeContext({ dropReasonNames: 'kernel' as const, dropReasonRingBufferSize: 1 << 15, dropReasonFallback: 'auto' as const }, { enablePodLevel: true, packetParserRingBufferSize: 1 << 20 });
  {
    await using _drop = await dropreason.start(r.ctx);
    const added = ringSizes();
    for (const s of before) added.splice(added.indexOf(s), 1);
    assert.deepEqual(added, [1 << 15]);
  }
  const off = fakeContext({ dropReasonNames: 'kernel' as const, dropReasonRingBufferSize: 1 << 15, dropReasonFallback: 'auto' as const }, { enablePodLevel: false });
  await using _off = await dropreason.start(off.ctx);
  const added = ringSizes();
  for (const s of before) added.splice(added.indexOf(s), 1);
  assert.deepEqual(added, [4096], 'without enablePodLevel: one page');
});
