/**
 * dns's packet filter per packet, side by side with Retina's: what one run of ours (`dns_socket_filter`,
 * the capture `retina_dns_egress` shares) and of Retina's `retina_dns_filter` (its dns plugin's socket
 * filter, from the object hack/retina/build.sh built) cost on the packets a node mostly sees, which are
 * not DNS (64-byte UDP, a full-size TCP segment, UDP over IPv6), and on a DNS query. Measured by the
 * kernel (BPF_PROG_TEST_RUN's mean ns per run over BENCH_DNS_REPEAT runs), ours and Retina's alternated
 * (A B B A, BENCH_DNS_ROUNDS times); the medians and ours / Retina's. Each packet goes through a tap
 * on every interface (Retina's twice: its tap sees packets leaving too), so this is per-packet cost on
 * the node's softirq. Retina's column is left out, saying why, when its agent is not built. Ours copies
 * DNS packets into its ring (64 MiB here, never read: a full ring is the reservation's failure, counted);
 * Retina's returns the length, which makes the kernel queue the packet on its socket. One JSON line per
 * packet kind, then a table. Needs root and kernel BTF.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cpus, loadavg, release } from 'node:os';
import { openBpfObject, testRunTimed, type BpfProgram } from '../../src/ffi/linux/index.js';
import { dnsFrame, dnsQuery } from '../../src/plugins/linux/dns/fixtures.js';
import { retinaBuild } from '../agent/cgroup-run.js';
import { envInt } from '../server/summary.js';
import { median } from '../datapath/setup.js';

const REPEAT = envInt('BENCH_DNS_REPEAT', 200_000);
const ROUNDS = envInt('BENCH_DNS_ROUNDS', 8);

/** `frame` (from its Ethernet header) with its ports set, behind a second Ethernet header: a test run takes the first off, as a device would. */
function packet(frame: Buffer, sport: number, dport: number, l4: number): Uint8Array {
  const f = Buffer.from(frame);
  f.writeUInt16BE(sport, l4);
  f.writeUInt16BE(dport, l4 + 2);
  return Uint8Array.from([...f.subarray(0, 14), ...f]);
}
const KINDS: Record<string, Uint8Array> = {
  'UDP IPv4, 64 bytes (not DNS)': packet(dnsFrame(Buffer.alloc(22)), 40000, 5201, 34),
  'TCP IPv4, 1448 bytes of payload (not DNS)': packet(dnsFrame(Buffer.alloc(1446), { tcp: true }), 40000, 5201, 34),
  'UDP IPv6, 64 bytes of payload (not DNS)': packet(dnsFrame(Buffer.alloc(56), { ipVersion: 6 }), 40000, 5201, 54),
  'DNS query, UDP IPv4': packet(dnsFrame(dnsQuery(7, 'svc.cluster.local')), 40000, 53, 34),
};

/** The context of a run: the packet seems to arrive on a device of this namespace other than lo (ours keeps lo's arrivals too, but a node's packets come on devices). */
function context(): Uint8Array {
  const ctx = new Uint8Array(48); // struct __sk_buff up to ifindex (offset 40)
  const dev = readdirSync('/sys/class/net').map((d) => Number(readFileSync(`/sys/class/net/${d}/ifindex`, 'utf8'))).find((i) => i > 1) ?? 2;
  new DataView(ctx.buffer).setUint32(40, dev, true);
  return ctx;
}

const load0 = loadavg();
using ours = openBpfObject('dns', { programs: ['dns_socket_filter'], maxEntries: { retina_dns_events: 1 << 26 } });
const build = retinaBuild();
const retinaPath = 'dir' in build ? join(build.dir, 'src', 'pkg', 'plugin', 'dns', `dns_${process.arch === 'arm64' ? 'arm64' : 'x86'}_bpfel.o`) : undefined;
using retina = retinaPath ? openBpfObject('retina-dns', { path: retinaPath, socketFilters: ['retina_dns_filter'] }) : undefined;
const subjects: [string, BpfProgram][] = [['ours', ours.program('dns_socket_filter')], ...(retina ? [['retina', retina.program('retina_dns_filter')] as [string, BpfProgram]] : [])];
const ctx = context();

const rows: Record<string, unknown>[] = [];
for (const [kind, p] of Object.entries(KINDS)) {
  const got: Record<string, number[]> = Object.fromEntries(subjects.map(([n]) => [n, []]));
  const order = [...subjects, ...[...subjects].reverse()];
  for (let r = 0; r < ROUNDS; r++) for (const [n, prog] of order) got[n]?.push(testRunTimed(prog, p, REPEAT, ctx).nsPerRun);
  const row: Record<string, unknown> = { name: 'ebpf/dns-filter', packet: kind, bytes: p.length - 14 };
  for (const [n] of subjects) row[`${n}Ns`] = median(got[n] ?? []);
  if (retina) row['oursToRetina'] = Number(((row['oursNs'] as number) / (row['retinaNs'] as number)).toFixed(3));
  rows.push(row);
  console.log(JSON.stringify(row));
}
console.log(`| packet | ours, ns a run | ${retina ? "Retina's, ns a run | ours / Retina's |" : ''}`);
console.log(`| --- | --- | ${retina ? '--- | --- |' : ''}`);
for (const r of rows) console.log(`| ${String(r['packet'])} | ${String(r['oursNs'])} | ${retina ? `${String(r['retinaNs'])} | ${String(r['oursToRetina'])} |` : ''}`);
console.log(JSON.stringify({
  name: 'ebpf/dns-filter-conditions', repeat: REPEAT, rounds: ROUNDS, kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model.trim(),
  loadavgBefore: load0, loadavgAfter: loadavg(), ...('missing' in build ? { retinaLeftOut: build.missing } : { retina: retinaPath }),
}));
