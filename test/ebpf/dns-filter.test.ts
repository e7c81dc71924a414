/**
 * dns's socket filter on a real kernel, packet by packet (BPF_PROG_TEST_RUN, the packet seeming to
 * arrive on one of this machine's devices): which packets it copies into its ring and at which IP
 * offset, seen from an Ethernet device and from one without a link header: IPv4 with and without
 * options, IPv6 with and without extension headers, UDP and TCP to and from port 53, TCP without
 * payload, short packets, fragments, other protocols and ports. (The kernel tests see the filter on
 * real traffic; this one reaches the layouts that traffic between veths does not.)
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { openBpfObject, testRunProgram } from '../../src/ffi/linux/index.js';
import { ResourceStack } from '../../src/plugin/index.js';
import { kernelClock } from '../../src/plugins/linux/ebpf-shared/clock.js';
import { wireEvents } from '../../src/plugins/linux/ebpf-shared/events.js';
import { DNS_EVENT_HEADER, tryDecodeDnsEvent } from '../../src/plugins/linux/dns/decode.js';
import { fakeContext } from './fake-context.js';
import { requireKernel, sleep } from './netns.js';

const MAC = [0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
const eth = (type: number): number[] => [...MAC, type >> 8, type & 0xff];
const be16 = (n: number): number[] => [n >> 8, n & 0xff];

/** A DNS query for `name` (A, IN), with a message id. */
function query(id: number, name: string): number[] {
  const q: number[] = [...be16(id), 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
  for (const label of name.split('.').filter(Boolean)) q.push(label.length, ...Buffer.from(label));
  return [...q, 0, 0, 1, 0, 1];
}

function ipv4(proto: number, l4: number[], o: { options?: number[]; frag?: number } = {}): number[] {
  const opts = o.options ?? [];
  const ihl = 5 + opts.length / 4;
  const total = ihl * 4 + l4.length;
  return [0x40 | ihl, 0, ...be16(total), 0, 1, ...be16(o.frag ?? 0), 64, proto, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, ...opts, ...l4];
}

/** `ext`: one extension header (its type, its 8 bytes after the next-header byte's place) before the L4 header. */
function ipv6(proto: number, l4: number[], ext?: { type: number; bytes: number[] }): number[] {
  const payload = ext ? [proto, ...ext.bytes.slice(1), ...l4] : l4;
  const addr = (last: number): number[] => [0xfd, 0, ...Array<number>(13).fill(0), last];
  return [0x60, 0, 0, 0, ...be16(payload.length), ext ? ext.type : proto, 64, ...addr(1), ...addr(2), ...payload];
}

const udp = (sport: number, dport: number, data: number[]): number[] => [...be16(sport), ...be16(dport), ...be16(8 + data.length), 0, 0, ...data];
/** A TCP segment with a 20-byte header (flags PSH|ACK) and `data`. */
const tcp = (sport: number, dport: number, data: number[]): number[] => [...be16(sport), ...be16(dport), 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0, ...data];
const tcpDns = (sport: number, dport: number, msg: number[]): number[] => tcp(sport, dport, [...be16(msg.length), ...msg]);
/** An IPv4 option of 4 bytes (NOP NOP NOP EOL). */
const OPTS = [1, 1, 1, 0];
const HOP_BY_HOP = { type: 0, bytes: [0, 0, 1, 4, 0, 0, 0, 0] }; // PadN over 6 bytes

/** A packet (from its Ethernet header), whether the filter copies it, and the question the copy decodes to. Its port 40001 + index names it. */
interface Case { readonly name: string; readonly packet: number[]; readonly kept: boolean; readonly dns?: string }
const CASES: Case[] = [
  { name: 'IPv4 UDP query to 53', packet: [...eth(0x0800), ...ipv4(17, udp(40001, 53, query(1, 'a.example')))], kept: true, dns: 'a.example' },
  { name: 'IPv4 UDP answer from 53', packet: [...eth(0x0800), ...ipv4(17, udp(53, 40002, query(2, 'b.example')))], kept: true },
  { name: 'IPv4 with options, UDP to 53', packet: [...eth(0x0800), ...ipv4(17, udp(40003, 53, query(3, 'c.example')), { options: OPTS })], kept: true, dns: 'c.example' },
  { name: 'IPv4 with options, UDP to 54', packet: [...eth(0x0800), ...ipv4(17, udp(40004, 54, query(4, 'd.example')), { options: OPTS })], kept: false },
  { name: 'IPv4 UDP to 54', packet: [...eth(0x0800), ...ipv4(17, udp(40005, 54, query(5, 'e.example')))], kept: false },
  { name: 'IPv4 UDP to 53, no payload', packet: [...eth(0x0800), ...ipv4(17, udp(40006, 53, []))], kept: true },
  { name: 'IPv4 TCP to 53 with a message', packet: [...eth(0x0800), ...ipv4(6, tcpDns(40007, 53, query(7, 'g.example')))], kept: true, dns: 'g.example' },
  { name: 'IPv4 TCP to 53 without payload (an ACK)', packet: [...eth(0x0800), ...ipv4(6, tcp(40008, 53, []))], kept: false },
  { name: 'IPv4 TCP from 53 without payload, IP options', packet: [...eth(0x0800), ...ipv4(6, tcp(53, 40009, []), { options: OPTS })], kept: false },
  { name: 'IPv4 later fragment whose bytes read as port 53', packet: [...eth(0x0800), ...ipv4(17, udp(40010, 53, query(10, 'j.example')), { frag: 0x0010 })], kept: false },
  { name: 'IPv4 ICMP', packet: [...eth(0x0800), ...ipv4(1, [8, 0, 0, 0, 0, 53, 0, 53, ...Array<number>(40).fill(0)])], kept: false },
  { name: 'ARP', packet: [...eth(0x0806), 0, 1, 8, 0, 6, 4, 0, 1, ...Array<number>(20).fill(0)], kept: false },
  { name: 'IPv6 UDP query to 53', packet: [...eth(0x86dd), ...ipv6(17, udp(40013, 53, query(13, 'm.example')))], kept: true, dns: 'm.example' },
  { name: 'IPv6 UDP to 5353', packet: [...eth(0x86dd), ...ipv6(17, udp(40014, 5353, query(14, 'n.example')))], kept: false },
  { name: 'IPv6 hop-by-hop, UDP to 53', packet: [...eth(0x86dd), ...ipv6(17, udp(40015, 53, query(15, 'o.example')), HOP_BY_HOP)], kept: true, dns: 'o.example' },
  { name: 'IPv6 hop-by-hop, UDP to 54', packet: [...eth(0x86dd), ...ipv6(17, udp(40016, 54, query(16, 'p.example')), HOP_BY_HOP)], kept: false },
  { name: 'IPv6 TCP from 53 with a message', packet: [...eth(0x86dd), ...ipv6(6, tcpDns(53, 40017, query(17, 'q.example')))], kept: true },
  { name: 'IPv6 TCP to 53 without payload', packet: [...eth(0x86dd), ...ipv6(6, tcp(40018, 53, []))], kept: false },
  { name: 'IPv6 fragment header before UDP to 53', packet: [...eth(0x86dd), ...ipv6(17, udp(40019, 53, query(19, 's.example')), { type: 44, bytes: [0, 0, 0, 0, 0, 0, 0, 1] })], kept: false },
  { name: 'IPv6 UDP to 53, no payload', packet: [...eth(0x86dd), ...ipv6(17, udp(40020, 53, []))], kept: true },
];

/** A device of this namespace other than lo: the filter leaves arrivals on loopback to its leaving copy. */
function deviceIndex(): number {
  for (const d of readdirSync('/sys/class/net')) {
    const i = Number(readFileSync(`/sys/class/net/${d}/ifindex`, 'utf8'));
    if (i > 1) return i;
  }
  throw new Error('no network device besides lo in this namespace');
}

/** What one ring record says: the packet's length, the bytes copied, where its IP header starts, the case's port, the question. */
interface Got { readonly len: number; readonly capLen: number; readonly l3: number; readonly srcPort: number; readonly query: string | undefined }

test('dns filter: the DNS packets of each layout copied at their IP header, every other packet left alone', async () => {
  requireKernel();
  const ifindex = deviceIndex();
  const ctx = new Uint8Array(48); // struct __sk_buff up to ifindex (offset 40)
  new DataView(ctx.buffer).setUint32(40, ifindex, true);
  const { ctx: pctx } = fakeContext({}, { metricsIntervalMs: 100 });
  const got: Got[] = [];
  // A test run hands a socket filter the packet from its IP header (the run takes the Ethernet header
  // off, as a device without one would show it); a packet socket on an Ethernet device shows the header.
  // Both views: the packet as given (a device without a link header), and behind a second Ethernet
  // header (what the socket sees on an Ethernet device).
  const views = [{ l3: 14 }, { l3: 0 }];
  await using s = await ResourceStack.build((st) => {
    const obj = st.use(openBpfObject('dns'));
    wireEvents<Got>(st, pctx, obj, {
      source: 'test', eventsMap: 'retina_dns_events', lostMap: 'retina_dns_lost', clock: kernelClock(),
      decode: (v, off, size) => {
        const capLen = v.getUint32(off + 12, true);
        const l3 = v.getUint16(off + 20, true);
        const ip = off + DNS_EVENT_HEADER + l3;
        const l4 = (v.getUint8(ip) >> 4) === 4 ? ip + (v.getUint8(ip) & 0xf) * 4 : ip + 40 + (v.getUint8(ip + 6) === 0 ? 8 : 0);
        const ports = [v.getUint16(l4), v.getUint16(l4 + 2)];
        return { len: v.getUint32(off + 8, true), capLen, l3, srcPort: ports[0] === 53 ? ports[1] as number : ports[0] as number, query: tryDecodeDnsEvent(v, off, size)?.message.questions[0]?.name };
      },
      onRecords: (r) => void got.push(...r),
    });
    for (const view of views) {
      for (const c of CASES) {
        const packet = view.l3 ? [...c.packet.slice(0, 14), ...c.packet] : c.packet;
        const rc = testRunProgram(obj.program('dns_socket_filter'), Uint8Array.from(packet), 1, ctx);
        assert.equal(rc, 0, `${c.name}: the filter queues nothing on its socket`);
      }
    }
  });
  const want = views.flatMap((view) => CASES.flatMap((c, i) => (c.kept ? [{
    case: c.name, l3: view.l3, len: c.packet.length - 14 + view.l3, capLen: c.packet.length - 14 + view.l3, srcPort: 40001 + i, query: c.dns,
  }] : [])));
  const deadline = Date.now() + 10_000;
  while (got.length < want.length && Date.now() < deadline) await sleep(50);
  await sleep(200); // and nothing more
  const seen = got.map((g) => {
    const c = CASES[g.srcPort - 40001];
    return { case: c?.name ?? `port ${g.srcPort}`, l3: g.l3, len: g.len, capLen: g.capLen, srcPort: g.srcPort, query: c?.dns === undefined ? undefined : g.query };
  });
  assert.deepEqual(seen, want);
  void s;
});
