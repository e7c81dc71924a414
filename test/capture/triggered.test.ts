/**
 * A triggered capture for real, without Kubernetes: `bin/retina-agent` (dropreason, Hubble on) in a
 * test namespace whose nftables deny drops UDP to 9999, and `retina-capture` with CAPTURE_TRIGGER in
 * the same namespace (as the capture Job beside the agent on a node's host network). Datagrams from a
 * second namespace: forwarded ones fill the pre-trigger ring, then the first dropped one fires the
 * trigger. The pcap, read here independently, holds the pre-trigger window, the first dropped datagram
 * at the index the manifest names, and the post-trigger packets; an armed capture whose trigger never
 * comes writes no packet file and succeeds. The drop-to-capture time is printed.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';
import { TAGGED_UDP_SEND } from '../ebpf/traffic.js';
import { droppingPair, NsAgent, type Netns } from '../ebpf/netns.js';
import { extract, freshDir, runWorkload, sh } from './workload-run.js';

holdDropsForThisFile();

const tag = `${process.pid % 100000}`;
const IF = `ctg${tag}`;
const NET = '10.214.9';
const A = `${NET}.1`;
const B = `${NET}.2`;
const HUBBLE = '127.0.0.1:24244';
/** A port no datagram of this test or another goes to (port 9, discard, met one from elsewhere on the machine). */
const NEVER_PORT = 61_000 + (process.pid % 500);

/** The packets of a classic pcap (raw Ethernet framing on a veth): UDP destination port and payload. */
function udpPackets(file: string): { tsMs: number; dport: number; payload: string }[] {
  const b = readFileSync(file);
  assert.equal(b.readUInt32LE(20), 1, 'Ethernet on the veth');
  const out: { tsMs: number; dport: number; payload: string }[] = [];
  for (let pos = 24; pos + 16 <= b.length;) {
    const incl = b.readUInt32LE(pos + 8);
    const ip = b.subarray(pos + 16 + 14, pos + 16 + incl);
    const ihl = ((ip[0] ?? 0) & 0x0f) * 4;
    const udp = ip[9] === 17;
    out.push({ tsMs: b.readUInt32LE(pos) * 1000 + b.readUInt32LE(pos + 4) / 1000, dport: udp ? ip.readUInt16BE(ihl + 2) : 0, payload: udp ? ip.subarray(ihl + 8).toString('latin1') : '' });
    pos += 16 + incl;
  }
  return out;
}

type TriggerManifest = {
  fired: boolean; flow: { dropReason: string; destinationPort: number; source: string }; triggeredAt: string; dropToCaptureMs: number; packetToCaptureMs: number;
  cut: { preTriggerPackets: number; triggerPacketIndex: number; matchedBy: string }; postTriggerPackets: number;
};

describe('a triggered capture: the agent\'s first NETFILTER_DROP starts it (real agent, real drops)', { timeout: 240_000 }, () => {
  let a: Netns;
  let b: Netns;
  let agent: NsAgent;
  before(async () => {
    if (process.getuid?.() !== 0) throw new Error('the triggered capture test needs root (network namespaces, eBPF, tcpdump)');
    ({ a, b } = droppingPair(`ctg-${tag}`, IF, NET));
    agent = new NsAgent(a, `enabledPlugin: [dropreason]\nhubble:\n  enabled: true\n  listenAddress: ${HUBBLE}\n`);
    await agent.started(['dropreason']);
  });
  after(async () => {
    await agent?.[Symbol.asyncDispose]();
    b?.destroy();
    a?.destroy();
  });

  const env = (name: string, out: string, trigger: Record<string, unknown>, duration = '60s'): Record<string, string> => ({
    CAPTURE_NAME: name, NODE_HOST_NAME: 'node-a', CAPTURE_START_TIMESTAMP: '2026-01-02T03:04:05Z', INCLUDE_METADATA: 'false', CAPTURE_DURATION: duration,
    CAPTURE_INTERFACES: `${IF}0`, TCPDUMP_FILTER: 'udp', HOSTPATH: out, CAPTURE_TRIGGER: JSON.stringify({ hubbleAddress: HUBBLE, ...trigger }),
  });

  it('the pcap holds the pre-trigger packets, the first dropped datagram where the manifest says, and the packets after it', async (t) => {
    const out = freshDir('ctg-out-');
    const run = runWorkload(env('trig', out, { dropReason: 'NETFILTER_DROP', flowFilter: { destinationPort: 9999, sourceIP: B }, preTrigger: { packets: 8 }, postTriggerDuration: '2s' }), { netns: a.name });
    await run.capturing;
    await b.node(TAGGED_UDP_SEND, ['40', A, '7000', 'pre', '5']);
    // A drop of another port: NETFILTER_DROP but not the trigger's flow filter (the agent filters it out).
    await new Promise((r) => setTimeout(r, 500));
    await b.node(TAGGED_UDP_SEND, ['6', A, '7000', 'last', '5']);
    const sentAt = Date.now();
    await b.node(TAGGED_UDP_SEND, ['3', A, '9999', 'drop', '50']);
    await b.node(TAGGED_UDP_SEND, ['5', A, '7000', 'post', '20']);
    const r = await run.done;
    assert.equal(r.code, 0, `${r.stderr}\n${r.termination}`);
    const tarball = sh('ls', [out]).trim();
    const x = extract(join(out, tarball));
    const tr = (x.manifest as unknown as { trigger: TriggerManifest }).trigger;
    assert.equal(x.manifest.stopReason, 'postTrigger');
    assert.ok(tr.fired);
    assert.deepEqual([tr.flow.dropReason, tr.flow.destinationPort, tr.flow.source], ['NETFILTER_DROP', 9999, B]);
    assert.equal(tr.cut.matchedBy, 'tuple');
    const ps = udpPackets(join(x.folder, x.manifest.files[0]?.name ?? ''));
    assert.equal(ps.length, x.manifest.packets);
    assert.equal(tr.cut.preTriggerPackets, 8);
    assert.equal(tr.cut.triggerPacketIndex, 8);
    assert.deepEqual(ps.slice(0, 8).map((p) => p.payload).slice(-6), ['last-000', 'last-001', 'last-002', 'last-003', 'last-004', 'last-005'], 'the last datagrams before the drop');
    assert.deepEqual(ps.slice(0, 2).map((p) => p.payload), ['pre-038', 'pre-039']);
    assert.deepEqual({ dport: ps[8]?.dport, payload: ps[8]?.payload }, { dport: 9999, payload: 'drop-000' }, 'the first dropped datagram is the trigger\'s packet');
    assert.deepEqual(ps.slice(9).map((p) => p.payload), ['drop-001', 'drop-002', 'post-000', 'post-001', 'post-002', 'post-003', 'post-004']);
    assert.equal(tr.postTriggerPackets, 7);
    assert.ok(tr.dropToCaptureMs > 0 && tr.dropToCaptureMs < 2000, `drop to capture: ${tr.dropToCaptureMs} ms`);
    t.diagnostic(`drop (the agent's flow time) -> capture writing: ${tr.dropToCaptureMs} ms; the packet as captured -> capture writing: ${tr.packetToCaptureMs} ms; send -> capture writing: ${Date.parse(tr.triggeredAt) - sentAt} ms`);
    console.log(JSON.stringify({ figure: 'triggered-capture-drop-to-capture', dropToCaptureMs: tr.dropToCaptureMs, packetToCaptureMs: tr.packetToCaptureMs }));
  });

  it('armed for its duration without a trigger: no packet file, the manifest says so, exit 0', async () => {
    const out = freshDir('ctg-out-');
    const run = runWorkload(env('quiet', out, { dropReason: 'NO_SOCKET', flowFilter: { destinationPort: NEVER_PORT } }, '3s'), { netns: a.name });
    await run.capturing;
    await b.node(TAGGED_UDP_SEND, ['3', A, '9999', 'other', '10']);
    const r = await run.done;
    assert.equal(r.code, 0, `${r.stderr}\n${r.termination}`);
    const x = extract(join(out, sh('ls', [out]).trim()));
    assert.equal(x.manifest.stopReason, 'notTriggered', JSON.stringify((x.manifest as unknown as { trigger: TriggerManifest }).trigger));
    assert.equal((x.manifest as unknown as { trigger: TriggerManifest }).trigger.fired, false);
    assert.deepEqual(x.manifest.files, []);
  });

  it('no agent answering: the capture fails naming the address and hubble.enabled', async () => {
    const out = freshDir('ctg-out-');
    const e = env('noagent', out, { pod: 'a/b', hubbleAddress: '127.0.0.1:1' }, '5s');
    const run = runWorkload(e, { netns: a.name, args: [] });
    const r = await run.done;
    assert.equal(r.code, 1);
    assert.match(r.termination, /the agent's Hubble server at 127\.0\.0\.1:1 does not answer .*hubble\.enabled/);
  });
});
