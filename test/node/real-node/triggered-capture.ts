/**
 * Real-node case, a triggered capture (issue 39): `kubectl-retina capture create --trigger-drop-reason
 * NETFILTER_DROP --trigger-pod <srv>` arms the real image's capture Job on the node against the
 * agent's Hubble (enabled by the Hubble case before it); the server pod's nftables deny of UDP to 9999
 * (chart.ts) drops the client's datagrams; the tarball's pcap, parsed here, must hold the pre-trigger
 * window (the client's datagrams to 7000 just before), the first dropped datagram at the index the
 * manifest names, and the packets after it; the drop-to-capture time is printed (see
 * test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { it } from 'node:test';
import { objectPath, resources } from '../../../src/k8s/index.js';
import { extract } from '../../capture/workload-run.js';
import { ROOT } from '../../chart/helm.js';
import { withDrops } from '../../ebpf/drop-lock.js';
import { TAGGED_UDP_SEND } from '../../ebpf/traffic.js';
import { sh } from '../../ebpf/netns.js';
import { createNamespace, eventually, listAll } from '../../integration/harness.js';
import { NODE_NAME } from '../node.js';
import { agentPods, podLog, type Pod } from '../workloads.js';
import { run, type RealNodeSuite } from './suite.js';

interface Packet {
  readonly tsMs: number;
  readonly src: string;
  readonly dst: string;
  readonly proto: number;
  readonly dport: number;
  readonly payload: string;
}

/** A classic pcap, parsed here on its own (not with the code under test): IPv4 in Ethernet or Linux cooked v1/v2 framing. */
function readPcap(file: string): { linkType: number; packets: Packet[] } {
  const b = readFileSync(file);
  assert.equal(b.readUInt32LE(0), 0xa1b2c3d4, 'a little-endian µs pcap');
  const linkType = b.readUInt32LE(20);
  const ipAt = ({ 1: 14, 113: 16, 276: 20 } as Record<number, number>)[linkType];
  assert.ok(ipAt !== undefined, `a link type read here: ${linkType}`);
  const packets: Packet[] = [];
  for (let pos = 24; pos + 16 <= b.length;) {
    const incl = b.readUInt32LE(pos + 8);
    const d = b.subarray(pos + 16, pos + 16 + incl);
    const ip = d.subarray(ipAt);
    const ihl = ((ip[0] ?? 0) & 0x0f) * 4;
    const v4 = ((ip[0] ?? 0) >> 4) === 4;
    packets.push({
      tsMs: b.readUInt32LE(pos) * 1000 + b.readUInt32LE(pos + 4) / 1000,
      src: v4 ? [...ip.subarray(12, 16)].join('.') : '', dst: v4 ? [...ip.subarray(16, 20)].join('.') : '', proto: v4 ? (ip[9] ?? 0) : 0,
      dport: v4 ? ip.readUInt16BE(ihl + 2) : 0, payload: v4 && ip[9] === 17 ? ip.subarray(ihl + 8).toString('latin1') : '',
    });
    pos += 16 + incl;
  }
  return { linkType, packets };
}

/** The hubble CLI's folder (hack/hubble/build.sh, already built for the Hubble case). */
const hubbleTools = (): string => execFileSync('bash', [`${ROOT}hack/hubble/build.sh`], { env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' }, encoding: 'utf8' }).trim();

/** `hubble observe` against the agent's Hubble on the node: its compact lines, or what failed. */
const observe = (args: readonly string[]): Promise<string> => run(join(hubbleTools(), 'hubble'), ['observe', '--server', '127.0.0.1:4244', ...args, '-o', 'compact'],
  { env: { ...process.env, HUBBLE_CONFIG: '/dev/null' }, timeout: 30_000 }).then((r) => r.stdout, (e: unknown) => String(e));

/** A Capture triggered by the first NETFILTER_DROP of the server pod on the real node. */
export function triggeredCaptureCases(s: RealNodeSuite): void {
  it('triggered capture: armed on the node against the agent\'s Hubble, the first NETFILTER_DROP of the server pod starts it; the pcap holds the pre-trigger packets, the first dropped datagram and what follows', async (t) => {
    const { node, client, imageRef, pods } = s;
    const { cli, srv } = pods;
    const ns = 'rn-trig';
    const dir = '/var/log/retina/captures/rn-trig';
    const PRE = 12;
    await createNamespace(client, ns);
    try {
      const created = await run(`${ROOT}bin/kubectl-retina`, ['capture', 'create', '--name', 'rn-trig', '--namespace', ns, '--node-names', NODE_NAME,
        '--trigger-drop-reason', 'NETFILTER_DROP', '--trigger-pod', `${srv.namespace}/${srv.name}`, '--pre-trigger-packets', String(PRE), '--post-trigger-duration', '3s',
        '--duration', '90s', '--include-filter', `${srv.ip}:7000,${srv.ip}:9999`, '--host-path', 'rn-trig', '--include-metadata=false', '--debug=true', '--kubeconfig', node.kubeconfig],
      { env: { ...process.env, RETINA_AGENT_IMAGE: imageRef }, timeout: 120_000 }).catch((e: unknown) => assert.fail(`capture create: ${String((e as { stderr?: string }).stderr ?? e)}`));
      assert.match(created.stdout, /armed for 90s on each node; triggers on the first NETFILTER_DROP drop from or to pod rn-b\/srv-[^;]+; keeps the last 12 packets before it and 3s after/);
      const pod = await eventually('the capture pod Running', 120_000, async () => {
        const ps = await listAll<Pod>(client, resources.pods, ns, { labelSelector: 'capture-name=rn-trig' });
        return ps.find((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded');
      }, 250);
      // "capturing": tcpdump streams into the ring and the agent accepted the follow.
      await eventually('the capture workload armed ("capturing")', 60_000, async () => (await podLog(client, pod)).some((l) => l['msg'] === 'capturing'), 200)
        .catch(async (e: unknown) => assert.fail(`${String(e)}\n${(await podLog(client, pod).catch(() => [])).map((l) => JSON.stringify(l)).join('\n')}`));
      // The follow is registered a moment after the call (the agent's GetFlows): forwarded traffic meanwhile fills the ring.
      await cli.ns.node(TAGGED_UDP_SEND, ['30', srv.ip, '7000', 'pre', '10']);
      await new Promise((r) => setTimeout(r, 1500));
      await cli.ns.node(TAGGED_UDP_SEND, ['5', srv.ip, '7000', 'pre2', '5']);
      const sentAt = Date.now();
      await withDrops(() => cli.ns.node(TAGGED_UDP_SEND, ['3', srv.ip, '9999', 'drop', '100']));
      await cli.ns.node(TAGGED_UDP_SEND, ['10', srv.ip, '7000', 'post', '20']);
      await eventually('the capture pod Succeeded', 60_000, async () =>
        (await client.request<Pod>('GET', objectPath(resources.pods, ns, pod.metadata.name))).status?.phase === 'Succeeded', 500)
        .catch(async (e: unknown) => assert.fail(`${String(e)}\n${(await podLog(client, pod).catch(() => [])).map((l) => JSON.stringify(l)).join('\n')}`));
      const tarballs = existsSync(dir) ? sh('ls', [dir]).split('\n').filter((f) => f.endsWith('.tar.gz')) : [];
      assert.equal(tarballs.length, 1, `one tarball in ${dir}: ${tarballs.join(', ')}`);
      const x = extract(join(dir, tarballs[0] ?? ''));
      const m = x.manifest as typeof x.manifest & { trigger?: {
        fired: boolean; flow: { dropReason: string; destinationPod: string; sourcePod: string; destinationPort: number }; triggeredAt: string; dropToCaptureMs: number; packetToCaptureMs: number;
        cut: { preTriggerPackets: number; triggerPacketIndex: number; triggerPacketTimeMs: number; matchedBy: string }; postTriggerPackets: number; ringDropped: number;
      } };
      const tr = m.trigger;
      if (!tr?.fired) {
        // What the agent served meanwhile, and what the workload and the agent said.
        const [agent] = await agentPods(client);
        const hubble = await observe(['--last', '40', '--verdict', 'DROPPED']);
        assert.fail(`the trigger did not fire: ${JSON.stringify(m)}\ncapture pod:\n${(await podLog(client, pod).catch(() => [])).map((l) => JSON.stringify(l)).join('\n')}\nagent:\n${
          agent ? (await podLog(client, agent).catch(() => [])).slice(-30).map((l) => JSON.stringify(l)).join('\n') : 'none'}\nhubble observe --verdict DROPPED on the node:\n${hubble}`);
      }
      // The figures first, so that a run failing a later assertion still says them.
      const sentToCapture = Date.parse(tr.triggeredAt) - sentAt;
      console.log(JSON.stringify({ figure: 'real-node-triggered-capture', dropToCaptureMs: tr.dropToCaptureMs, packetToCaptureMs: tr.packetToCaptureMs, sendToCaptureMs: sentToCapture, cut: tr.cut, packets: m.packets, kernelDropped: m.dropped, ringDropped: tr.ringDropped }));
      assert.equal(m.stopReason, 'postTrigger');
      assert.equal(tr.flow.dropReason, 'NETFILTER_DROP');
      assert.equal(tr.flow.destinationPod, `${srv.namespace}/${srv.name}`);
      assert.equal(tr.flow.sourcePod, `${cli.namespace}/${cli.name}`);
      assert.equal(tr.flow.destinationPort, 9999);
      assert.equal(tr.cut.matchedBy, 'tuple', 'the trigger\'s packet found by the drop\'s 5-tuple');

      const pcap = readPcap(join(x.folder, m.files[0]?.name ?? ''));
      const ps = pcap.packets;
      assert.equal(ps.length, m.packets, 'the manifest counts the file\'s packets');
      assert.equal(sh('tcpdump', ['-r', join(x.folder, m.files[0]?.name ?? ''), '-nn', '-q']).split('\n').filter(Boolean).length, ps.length, 'tcpdump reads the same packets');
      const trig = ps[tr.cut.triggerPacketIndex];
      assert.ok(trig, `the trigger's packet at index ${tr.cut.triggerPacketIndex} of ${ps.length}`);
      // the first dropped datagram: drop-000 from the client to the server's port 9999
      assert.deepEqual({ src: trig.src, dst: trig.dst, dport: trig.dport, payload: trig.payload }, { src: cli.ip, dst: srv.ip, dport: 9999, payload: 'drop-000' });
      const firstDrop = ps.findIndex((p) => p.dport === 9999);
      assert.equal(ps[firstDrop]?.payload, 'drop-000', 'no dropped datagram before the first one');
      assert.ok(ps.slice(firstDrop, tr.cut.triggerPacketIndex + 1).every((p) => p.payload === 'drop-000'), 'between the first copy of drop-000 (-i any sees it on each interface) and the trigger\'s packet, only drop-000');
      // the pre-trigger window: exactly PRE packets before the trigger's packet, all forwarded datagrams sent just before
      assert.equal(tr.cut.preTriggerPackets, PRE);
      assert.equal(tr.cut.triggerPacketIndex, PRE);
      // -i any sees each datagram on more than one interface of the bridge (the client's veth, the bridge, the server's veth)
      const pre = ps.slice(0, firstDrop);
      const sent = [...Array.from({ length: 30 }, (_, i) => `pre-${String(i).padStart(3, '0')}`), ...Array.from({ length: 5 }, (_, i) => `pre2-${String(i).padStart(3, '0')}`)];
      const distinct = [...new Set(pre.map((p) => p.payload))];
      assert.ok(pre.length > 0 && pre.every((p) => p.dport === 7000), `the pre-trigger packets are datagrams to 7000: ${pre.map((p) => p.payload).join(' ')}`);
      const want = sent.slice(sent.length - distinct.length);
      // When they are not, what says where the missing ones went: every packet of the file with its time,
      // tcpdump's own count of what the kernel dropped for it, the ring's evictions, and the agent's view of
      // the client's traffic to the server (its Hubble: forwarded and dropped, with the kernel's reasons).
      const evidence = isDeepStrictEqual(distinct, want) ? '' : `\npcap: ${ps.map((p) => `${p.tsMs.toFixed(1)} ${p.payload}`).join(', ')}\n` +
        `tcpdump's kernel drops: ${String(m.dropped)}; ring evictions: ${tr.ringDropped}\nhubble observe --from-ip ${cli.ip} --to-ip ${srv.ip}:\n${await observe(['--from-ip', cli.ip, '--to-ip', srv.ip, '--last', '200'])}`;
      assert.deepEqual(distinct, want, `the pre-trigger packets are the last datagrams sent before the drop, in order: ${pre.map((p) => p.payload).join(' ')}${evidence}`);
      // after it: the other two drops and the post datagrams, within the post-trigger window
      const after = ps.slice(tr.cut.triggerPacketIndex + 1).map((p) => p.payload);
      for (const want of ['drop-001', 'drop-002', 'post-000', 'post-009']) assert.ok(after.includes(want), `${want} after the trigger: ${after.join(' ')}`);
      assert.equal(tr.postTriggerPackets, ps.length - PRE - 1);
      const end = Date.parse(tr.triggeredAt) + 3000;
      assert.ok(ps.every((p) => p.tsMs <= end + 50), 'nothing written after the post-trigger window');
      assert.ok(trig.tsMs >= sentAt - 5, 'the trigger\'s packet is the one sent after the arming');
      assert.ok(tr.dropToCaptureMs > 0 && tr.dropToCaptureMs < 2000, `drop to capture start: ${tr.dropToCaptureMs} ms`);
      t.diagnostic(`drop (kernel, the agent's flow time) -> capture writing: ${tr.dropToCaptureMs} ms; the dropped packet as captured -> capture writing: ${tr.packetToCaptureMs} ms; the test's send -> capture writing: ${sentToCapture} ms`);
      t.diagnostic(`pcap: ${ps.length} packets (link type ${pcap.linkType}), ${PRE} before the trigger's packet at index ${tr.cut.triggerPacketIndex}, ${tr.postTriggerPackets} after`);
    } finally {
      await client.request('DELETE', objectPath(resources.namespaces, undefined, ns)).catch(() => undefined);
      await eventually(`namespace ${ns} gone`, 120_000, async () => client.request('GET', objectPath(resources.namespaces, undefined, ns)).then(() => false, () => true), 500).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  });
}
