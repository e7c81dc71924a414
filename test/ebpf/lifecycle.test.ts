/**
 * The eBPF plugins' life cycle on a real kernel, driven directly: start-stop-start-stop, a second
 * stop is harmless, nothing stays live (ResourceStack tracker, BPF programs and links, tc filters),
 * and a hook the kernel lacks fails that plugin alone, with a log line naming the hook.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { dns, runDns } from '../../src/plugins/linux/dns/index.js';
import type { DnsConfig } from '../../src/plugins/linux/dns/config.js';
import { dropreason, runDropreason } from '../../src/plugins/linux/dropreason/index.js';
import { packetforward } from '../../src/plugins/linux/packetforward/index.js';
import { runTcpretrans, tcpretrans } from '../../src/plugins/linux/tcpretrans/index.js';
import { PermanentError, liveResourceStacks, type AnyPluginDefinition, type PluginContext } from '../../src/plugin/index.js';
import { fakeContext } from './fake-context.js';
import { bpfIdsOf, leftoversAfterStop, requireKernel, sh } from './netns.js';

/** dns puts its egress program on every interface but lo: here, in the machine's own namespace, on this veth alone (this kernel has no dummy links). */
const DNS_LINK = 'rtbpf-lcdns';
before(() => {
  requireKernel();
  try {
    sh('ip', ['link', 'del', DNS_LINK]); // a killed run's
  } catch {
    // none
  }
  sh('ip', ['link', 'add', DNS_LINK, 'type', 'veth', 'peer', 'name', `${DNS_LINK}p`]);
});
after(() => {
  try {
    sh('ip', ['link', 'del', DNS_LINK]);
  } catch {
    // not made
  }
});
const dnsOnItsLink: AnyPluginDefinition = { ...dns, start: (ctx) => runDns(ctx as PluginContext<DnsConfig>, { interfaces: (l) => l.name === DNS_LINK }) };

const cases: [AnyPluginDefinition, object, string, string[]][] = [
  [packetforward, { interfaces: ['lo'], tcMode: 'tcx' }, ' (tcx)', ['lo']],
  [packetforward, { interfaces: ['lo'], tcMode: 'clsact' }, ' (clsact)', ['lo']],
  [dropreason, { dropReasonNames: 'kernel', dropReasonRingBufferSize: 1 << 16, dropReasonFallback: 'auto' }, '', []],
  [tcpretrans, {}, '', []],
  [dnsOnItsLink, { dnsRingBufferSize: 1 << 16, tcMode: 'tcx' }, ' (tcx)', [DNS_LINK]],
  [dnsOnItsLink, { dnsRingBufferSize: 1 << 16, tcMode: 'clsact' }, ' (clsact)', [DNS_LINK]],
];

for (const [def, config, variant, ifnames] of cases) {
  test(`${def.name}${variant}: start-stop-start-stop leaves nothing behind`, async () => {
    requireKernel();
    const live = liveResourceStacks();
    const before = bpfIdsOf(process.pid);
    const owned: { progs: number[]; links: number[] } = { progs: [], links: [] };
    for (const podLevel of [false, true]) {
      const { ctx, got } = fakeContext(config, { enablePodLevel: podLevel });
      const handle = await def.start(ctx);
      assert.ok(got.logs.some((l) => l.msg.startsWith('eBPF hook')), 'logs the hooks it attached');
      if (def === dnsOnItsLink) assert.ok(got.logs.some((l) => l.msg === 'interface attached' && l.fields['interface'] === DNS_LINK), `retina_dns_egress attached to ${DNS_LINK}`);
      const held = bpfIdsOf(process.pid);
      owned.progs.push(...held.progs.filter((id) => !before.progs.includes(id)));
      owned.links.push(...held.links.filter((id) => !before.links.includes(id)));
      await handle[Symbol.asyncDispose]();
      await handle[Symbol.asyncDispose]();
    }
    assert.ok(owned.progs.length > 0, 'the plugin loaded programs');
    assert.equal(liveResourceStacks(), live, 'no ResourceStack left live');
    assert.deepEqual(await leftoversAfterStop(undefined, ifnames, owned), []);
  });
}

test('a tracepoint the kernel lacks fails that plugin alone, naming the hook', async () => {
  requireKernel();
  const live = liveResourceStacks();
  const missing = { program: 'dropreason_kfree_skb', kind: 'tp_btf' as const, target: 'rtbpf_no_such_event', label: 'tp_btf/rtbpf_no_such_event' };
  const { ctx, got } = fakeContext({ dropReasonNames: 'kernel' as const, dropReasonRingBufferSize: 4096, dropReasonFallback: 'auto' as const });
  await assert.rejects(runDropreason(ctx, () => [missing]), (e: unknown) => e instanceof PermanentError && /tp_btf\/rtbpf_no_such_event/.test(e.message));
  const line = got.logs.find((l) => l.level === 'error' && l.msg === 'eBPF hook unavailable');
  assert.equal(line?.fields['hook'], 'tp_btf/rtbpf_no_such_event');
  // The other plugins still start in the same process.
  const other = fakeContext({});
  const handle = await runTcpretrans(other.ctx);
  const owned = bpfIdsOf(process.pid);
  assert.ok(owned.links.length > 0, 'tcpretrans attached');
  await handle[Symbol.asyncDispose]();
  assert.equal(liveResourceStacks(), live);
  assert.deepEqual(await leftoversAfterStop(undefined, [], owned), []);
});

test('no hook at all (the chooser throws): PermanentError and a log line naming the hook', async () => {
  requireKernel();
  const { ctx, got } = fakeContext({});
  await assert.rejects(runTcpretrans(ctx, () => { throw new Error('no tcp_retransmit_skb tracepoint'); }), PermanentError);
  assert.equal(got.logs.find((l) => l.msg === 'eBPF hook unavailable')?.fields['hook'], 'tp_btf/tcp_retransmit_skb');
});
