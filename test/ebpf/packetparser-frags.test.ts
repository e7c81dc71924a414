/**
 * packetparser on packets whose headers are not in the skb's linear part. Ordinary veth traffic
 * always has them there (parse() reads them in place), so these come from a TAP device made with
 * IFF_NAPI_FRAGS (tapfrags.c): each frame is written as two iovecs, the Ethernet header and the
 * rest, and the kernel keeps the rest in page fragments; with GRO off nothing pulls the IP and L4
 * headers in before tc. packetparser (low, the tap as its host interface) must read them with
 * bpf_skb_load_bytes (parse_copied) and report exactly what parse() would: one record per frame,
 * addresses, ports, protocol, TCP flags and timestamps, IPv4 and IPv6.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { cHelper } from './c-helper.js';
import { LineQueue } from './line-queue.js';
import { Netns, leftoversAfterStop, requireKernel } from './netns.js';
import { Harness, tearDown, type PFlow } from './packetparser-topology.js';

const N = 40;
const TAP = 'pptap0';
const SRC = '10.243.0.2';
const DST = '10.243.0.1';
const SRC6 = 'fd00:243::2';
const DST6 = 'fd00:243::1';

let node: Netns;
let tap: ChildProcess;
let h: Harness | undefined;
let tapLines: LineQueue;
const nextLine = (): Promise<string> => tapLines.next(10_000, () => new Error('tapfrags did not answer'));

/** Writes `n` frames through the tap; resolves once they are written. */
async function send(kind: 'udp4' | 'udp6' | 'tcp4', n: number, src: string, dst: string, sport: number, dport: number, size: number, tsval = 0): Promise<void> {
  tap.stdin?.write(`${kind} ${n} ${src} ${dst} ${sport} ${dport} ${size} ${tsval}\n`);
  assert.equal(await nextLine(), 'ok');
}

before(async () => {
  requireKernel();
  node = new Netns('ppfrag');
  tap = spawn('ip', ['netns', 'exec', node.name, cHelper('test/ebpf/tapfrags.c'), TAP], { stdio: ['pipe', 'pipe', 'inherit'] });
  tapLines = new LineQueue(tap.stdout as NodeJS.ReadableStream);
  assert.equal(await nextLine(), 'ready');
  node.run('ip', ['link', 'set', TAP, 'up']);
  node.run('ethtool', ['-K', TAP, 'gro', 'off']);
});

after(async () => {
  tap?.stdin?.end();
  await tearDown(tap ? [tap] : [], h, undefined);
  node?.destroy();
});

test('headers in page fragments (a NAPI_FRAGS tap, GRO off) are parsed the same: one exact record per frame', async () => {
  h = new Harness(node);
  const { status } = await h.start({ hostInterfaces: [TAP] }, { dataAggregationLevel: 'low' }, [SRC, SRC6]);
  assert.deepEqual(status.filter((s) => !s.startsWith('ok')), []);
  await h.settle(300);

  await send('udp4', N, SRC, DST, 4001, 53, 100);
  await send('udp6', N, SRC6, DST6, 4002, 5353, 200);
  await send('tcp4', N, SRC, DST, 4003, 8080, 300, 0x01020304);
  const flows = (await h.settle()).filter((f) => f.src === SRC || f.src === SRC6);

  const expect = (what: string, pred: (f: PFlow) => boolean, want: Partial<PFlow>): void => {
    const got = flows.filter(pred);
    assert.equal(got.length, N, `${what}: one record per frame (${JSON.stringify(flows.slice(0, 2))})`);
    for (const f of got) {
      for (const [k, v] of Object.entries(want)) assert.deepEqual(f[k as keyof PFlow], v, `${what}: ${k} of ${JSON.stringify(f)}`);
    }
  };
  const base = { obs: 'FROM_NETWORK', packets: 1, reply: false, dir: 'INGRESS' };
  expect('UDP over IPv4', (f) => f.proto === 17 && f.v === 4, { ...base, src: SRC, dst: DST, sport: 4001, dport: 53, bytes: 14 + 20 + 8 + 100 });
  expect('UDP over IPv6', (f) => f.proto === 17 && f.v === 6, { ...base, src: SRC6, dst: DST6, sport: 4002, dport: 5353, bytes: 14 + 40 + 8 + 200 });
  // A connection first seen through a mid-stream ACK was started by the other end: these are its replies.
  expect('TCP over IPv4', (f) => f.proto === 6, {
    ...base, reply: true, dir: 'EGRESS', src: SRC, dst: DST, sport: 4003, dport: 8080, bytes: 14 + 20 + 32 + 300, flags: 0x18, tsval: 0x01020304, tsecr: 0,
  });
  assert.equal(flows.length, 3 * N, 'nothing else from these sources');

  const owned = h.bpf();
  await h.call({ op: 'stop' });
  assert.deepEqual(await leftoversAfterStop(node, [TAP], owned), []);
});
