/**
 * A synthetic cluster and node for the pipeline benchmark (pure, seeded): an IpCache with nodes,
 * pods (some dual-stack), services and a CoreDNS; a few thousand connections of this node's pods;
 * and the records this node's plugins would read for them: packetparser packet_event records
 * (native-linux/include/packet_event.h, 120 bytes, in one ArrayBuffer), dropreason and tcpretrans
 * records, and decoded DNS records.
 */
import { IpCache, type PodEndpoint } from '../../src/cache/index.js';
import { PACKET_EVENT_SIZE } from '../../src/plugins/linux/packetparser/decode.js';
import { peerHash } from '../../src/plugins/linux/packetparser/raw-decoder.js';
import { DROP_EVENT_SIZE } from '../../src/plugins/linux/dropreason/decode.js';
import { RETRANS_EVENT_SIZE } from '../../src/plugins/linux/tcpretrans/decode.js';
import { decodeDnsEvent, type DnsRecord } from '../../src/plugins/linux/dns/decode.js';
import { dnsEvent, dnsFrame, dnsQuery, dnsResponse } from '../../src/plugins/linux/dns/fixtures.js';
import { rng } from '../random.js';

export const THIS_NODE = 'node-0';

export interface FixtureOptions {
  readonly nodes: number;
  readonly pods: number;
  readonly services: number;
  readonly connections: number;
  /** Records (all kinds) to generate; the benchmark cycles through them in batches. */
  readonly records: number;
  /** Share of packetparser (forwarded) records; the rest: drops 40%, DNS 35%, retransmissions 25%. */
  readonly forwardShare: number;
  /** true: the cache holds only this node's pods (local context's watch); services and nodes always. */
  readonly localOnly: boolean;
}

/** One record of the schedule: which decoder, where. */
export type Rec = { readonly kind: 'pp' | 'drop' | 'retrans'; readonly off: number } | { readonly kind: 'dns'; readonly rec: DnsRecord };

export interface Fixture {
  readonly cache: IpCache;
  readonly pp: DataView;
  readonly drops: DataView;
  readonly retrans: DataView;
  readonly schedule: readonly Rec[];
  readonly thisNodePods: number;
}

interface Addr { readonly v4: number; readonly v6: Uint8Array | undefined }
interface Conn { readonly a: Addr; readonly b: Addr; readonly aPort: number; readonly bPort: number; readonly proto: number; readonly six: boolean; readonly obsOrig: readonly number[]; readonly obsReply: readonly number[]; readonly aInitiates: boolean; readonly dropReason: number }

const FROM_ENDPOINT = 0, TO_ENDPOINT = 1, FROM_NETWORK = 2, TO_NETWORK = 3;
const v4s = (n: number): string => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
const v4n = (a: number, b: number, c: number, d: number): number => ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
function v6of(n: number): Uint8Array {
  const b = new Uint8Array(16);
  b.set([0xfd, 0x00, 0x00, 0x10], 0);
  new DataView(b.buffer).setUint32(12, n, false);
  return b;
}
const v6s = (b: Uint8Array): string => {
  const v = new DataView(b.buffer);
  const w = Array.from({ length: 8 }, (_, i) => v.getUint16(i * 2, false).toString(16));
  return `${w[0]}:${w[1]}::${w[6]}:${w[7]}`;
};

export function buildFixture(o: FixtureOptions): Fixture {
  // mulberry32 (bench/random.ts): a linear congruential generator's low bits repeat with short periods,
  // which made draws taken one after the other (protocol, then packets) depend on each other.
  const next = rng(42);
  const rnd = (m: number): number => Math.floor(next() * m);
  const cache = new IpCache();
  const nodeIp = (i: number): number => v4n(192, 168, i >> 8, i & 255);
  for (let i = 0; i < o.nodes; i++) cache.upsertNode({ kind: 'node', name: `node-${i}`, ips: [v4s(nodeIp(i))], zone: `zone-${'abc'[i % 3]}` });
  const pods: { addr: Addr; node: number; app: number }[] = [];
  for (let i = 0; i < o.pods; i++) {
    const node = i % o.nodes;
    const n = v4n(10, 244, node, 2 + Math.floor(i / o.nodes));
    const six = i % 7 === 0;
    const addr = { v4: n, v6: six ? v6of(n) : undefined };
    const app = i % o.services;
    pods.push({ addr, node, app });
    if (o.localOnly && node !== 0) continue;
    const ns = `ns-${app % 20}`;
    const pod: PodEndpoint = {
      kind: 'pod', namespace: ns, name: `app-${app}-${i}`, ips: addr.v6 ? [v4s(n), v6s(addr.v6)] : [v4s(n)], nodeIP: v4s(nodeIp(node)),
      labels: { app: `app-${app}` }, annotations: {}, owners: [{ kind: 'ReplicaSet', name: `app-${app}-5d4f8c9b7` }], workloads: [{ kind: 'Deployment', name: `app-${app}` }],
    };
    cache.upsertPod(pod);
  }
  for (let s = 0; s < o.services; s++) {
    cache.upsertService({ kind: 'service', namespace: `ns-${s % 20}`, name: `app-${s}`, ips: [v4s(v4n(10, 96, s >> 8, s & 255))], selector: { app: `app-${s}` } });
  }
  const local = pods.filter((p) => p.node === 0);
  const remote = pods.filter((p) => p.node !== 0);
  const pick = <T>(a: readonly T[]): T => a[rnd(a.length)] as T;
  const external = (): Addr => ({ v4: v4n(20 + rnd(50), rnd(256), rnd(256), 1 + rnd(250)), v6: undefined });
  const host: Addr = { v4: nodeIp(0), v6: undefined };
  const conns: Conn[] = [];
  for (let c = 0; c < o.connections; c++) {
    const r = rnd(100);
    const a = pick(local).addr;
    const proto = rnd(10) === 0 ? 17 : 6;
    // A connection's drops mostly come from one place (a policy rule, a full queue): one reason each.
    const base = { aPort: 30000 + rnd(30000), proto, dropReason: [2, 5, 6, 16][rnd(4)] as number };
    if (r < 35) { // this node's pod → a pod on another node
      const b = pick(remote).addr;
      conns.push({ ...base, a, b, bPort: 8080, six: !!(a.v6 && b.v6), obsOrig: [FROM_ENDPOINT, TO_NETWORK], obsReply: [FROM_NETWORK, TO_ENDPOINT], aInitiates: true });
    } else if (r < 50) { // a pod elsewhere → this node's pod
      const b = pick(remote).addr;
      conns.push({ ...base, a, b, bPort: 40000 + rnd(20000), six: false, obsOrig: [FROM_NETWORK, TO_ENDPOINT], obsReply: [FROM_ENDPOINT, TO_NETWORK], aInitiates: false });
    } else if (r < 65) { // pod to pod on this node
      const b = pick(local).addr;
      conns.push({ ...base, a, b, bPort: 8080, six: !!(a.v6 && b.v6), obsOrig: [FROM_ENDPOINT, TO_ENDPOINT], obsReply: [FROM_ENDPOINT, TO_ENDPOINT], aInitiates: true });
    } else if (r < 75) { // to a Service ClusterIP (seen before DNAT at the veth)
      const s = rnd(o.services);
      conns.push({ ...base, a, b: { v4: v4n(10, 96, s >> 8, s & 255), v6: undefined }, bPort: 80, six: false, obsOrig: [FROM_ENDPOINT], obsReply: [TO_ENDPOINT], aInitiates: true });
    } else if (r < 85) { // to the Internet
      conns.push({ ...base, a, b: external(), bPort: 443, six: false, obsOrig: [FROM_ENDPOINT, TO_NETWORK], obsReply: [FROM_NETWORK, TO_ENDPOINT], aInitiates: true });
    } else if (r < 90) { // the kubelet probing a pod
      conns.push({ ...base, a: host, b: a, bPort: 8080, six: false, obsOrig: [TO_ENDPOINT], obsReply: [FROM_ENDPOINT], aInitiates: true });
    } else { // the host itself talking to other nodes or the Internet: the host interface only
      conns.push({ ...base, a: host, b: rnd(2) ? { v4: nodeIp(1 + rnd(o.nodes - 1)), v6: undefined } : external(), bPort: 443, six: false, obsOrig: [TO_NETWORK], obsReply: [FROM_NETWORK], aInitiates: true });
    }
  }

  const pp = new DataView(new ArrayBuffer(o.records * PACKET_EVENT_SIZE));
  const drops = new DataView(new ArrayBuffer(o.records * DROP_EVENT_SIZE));
  const retrans = new DataView(new ArrayBuffer(o.records * RETRANS_EVENT_SIZE));
  const dnsRecs = dnsRecords(local.map((p) => v4s(p.addr.v4)), v4s(v4n(10, 96, 0, 10)), rnd);
  const schedule: Rec[] = [];
  let nPp = 0, nDrop = 0, nRetrans = 0;
  const zipf = (): Conn => conns[Math.floor((rnd(1_000_000) / 1_000_000) ** 2 * conns.length)] as Conn; // a few connections carry most
  const ts = 1_000_000_000;
  for (let i = 0; i < o.records; i++) {
    const c = zipf();
    const reply = rnd(2) === 1;
    if (rnd(1000) < o.forwardShare * 1000) {
      writePacketEvent(pp, nPp * PACKET_EVENT_SIZE, c, reply, ts + i * 1000, rnd);
      schedule.push({ kind: 'pp', off: nPp++ * PACKET_EVENT_SIZE });
      continue;
    }
    const r = rnd(100);
    if (r < 40) {
      writeTuple(drops, nDrop * DROP_EVENT_SIZE, c, reply, rnd);
      schedule.push({ kind: 'drop', off: nDrop++ * DROP_EVENT_SIZE });
    } else if (r < 75) {
      schedule.push({ kind: 'dns', rec: pick(dnsRecs) });
    } else {
      writeRetrans(retrans, nRetrans * RETRANS_EVENT_SIZE, c, rnd);
      schedule.push({ kind: 'retrans', off: nRetrans++ * RETRANS_EVENT_SIZE });
    }
  }
  return { cache, pp, drops, retrans, schedule, thisNodePods: local.length };
}

function writeAddr(v: DataView, off: number, a: Addr, six: boolean): void {
  if (six && a.v6) for (let i = 0; i < 16; i++) v.setUint8(off + i, a.v6[i] as number);
  else v.setUint32(off, a.v4, false);
}

function writePacketEvent(v: DataView, off: number, c: Conn, reply: boolean, tsNs: number, rnd: (m: number) => number): void {
  const [s, d, sp, dp] = reply ? [c.b, c.a, c.bPort, c.aPort] : [c.a, c.b, c.aPort, c.bPort];
  const obs = reply ? c.obsReply : c.obsOrig;
  const packets = rnd(4) === 0 ? 1 : 2 + rnd(60);
  v.setUint32(off, tsNs % 4294967296, true);
  v.setUint32(off + 4, Math.floor(tsNs / 4294967296), true);
  writeAddr(v, off + 8, s, c.six);
  writeAddr(v, off + 24, d, c.six);
  v.setUint16(off + 40, sp, true);
  v.setUint16(off + 42, dp, true);
  v.setUint8(off + 44, c.six ? 6 : 4);
  v.setUint8(off + 45, c.proto);
  v.setUint8(off + 46, obs[rnd(5) === 0 ? obs.length - 1 : 0] as number); // the host interface 1 in 5 (low aggregation)
  v.setUint8(off + 47, c.aInitiates !== reply ? 2 : 1);
  v.setUint8(off + 48, reply ? 1 : 0);
  v.setUint8(off + 49, packets === 1 ? 0 : 3);
  v.setUint32(off + 52, packets, true);
  v.setUint32(off + 56, packets * (100 + rnd(1400)), true);
  v.setUint32(off + 116, peerHash(v, off), true); // as the kernel writes it
  if (c.proto !== 6) return;
  const flags = packets === 1 ? [0x10, 0x18, 0x02, 0x12, 0x11][rnd(5)] as number : 0x18;
  v.setUint16(off + 50, flags, true);
  v.setUint32(off + 64, rnd(1 << 30), true);
  v.setUint32(off + 68, rnd(1 << 30), true);
  if (packets > 1) {
    v.setUint32(off + 76 + 4 * 4, Math.ceil(packets / 2), true); // PSH
    v.setUint32(off + 76 + 5 * 4, packets, true); // ACK
  }
}

function writeTuple(v: DataView, off: number, c: Conn, reply: boolean, rnd: (m: number) => number): void {
  const [s, d, sp, dp] = reply ? [c.b, c.a, c.bPort, c.aPort] : [c.a, c.b, c.aPort, c.bPort];
  v.setUint32(off + 8, rnd(10) === 0 ? 2 : c.dropReason, true); // reason: the connection's, sometimes NOT_SPECIFIED
  v.setUint32(off + 12, reply ? 1 : 2, true); // direction
  v.setUint32(off + 16, 60 + rnd(1400), true);
  const t = off + 24;
  writeAddr(v, t, s, false);
  writeAddr(v, t + 16, d, false);
  v.setUint16(t + 32, sp, true);
  v.setUint16(t + 34, dp, true);
  v.setUint8(t + 36, 4);
  v.setUint8(t + 37, c.proto);
  v.setUint8(t + 38, c.proto === 6 ? 0x10 : 0);
}

function writeRetrans(v: DataView, off: number, c: Conn, rnd: (m: number) => number): void {
  v.setUint32(off + 8, c.a.v4, false);
  v.setUint32(off + 24, c.b.v4, false);
  v.setUint16(off + 40, c.aPort, true);
  v.setUint16(off + 42, c.bPort, true);
  v.setUint8(off + 44, 4);
  v.setUint8(off + 46, 0x18);
  v.setUint32(off + 48, 1 + rnd(2), true);
  v.setUint32(off + 52, 1400, true);
}

const decode = (b: Buffer): DnsRecord => decodeDnsEvent(new DataView(b.buffer, b.byteOffset, b.byteLength), 0, b.byteLength);

function dnsRecords(podIps: readonly string[], coreDns: string, rnd: (m: number) => number): DnsRecord[] {
  const out: DnsRecord[] = [];
  for (let i = 0; i < 200; i++) {
    const name = `svc-${rnd(40)}.ns-${rnd(20)}.svc.cluster.local`;
    const q = dnsQuery(i, name, rnd(4) === 0 ? 28 : 1);
    const pod = podIps[rnd(podIps.length)] as string;
    out.push({ ...decode(dnsEvent(dnsFrame(q), { outgoing: true })), srcIp: pod, dstIp: coreDns });
    const r = decode(dnsEvent(dnsFrame(dnsResponse(q, [`10.96.0.${rnd(200)}`]), { response: true })));
    out.push({ ...r, srcIp: coreDns, dstIp: pod });
  }
  return out;
}
