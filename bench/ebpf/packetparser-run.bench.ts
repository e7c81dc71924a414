/**
 * packetparser's pod veth programs per run, measured by the kernel (BPF_PROG_TEST_RUN's mean ns per run
 * over BENCH_PP_REPEAT runs): a 64-byte UDP datagram of a connection the table already knows (the first
 * run makes the entry; high aggregation, so the packet is held, as nearly all of a busy connection's are),
 * as the veth's pod sends it (ingress) or receives it (egress): with that pod of interest; with that pod
 * not of interest and its peer of interest; and with neither of interest (a pod a MetricsConfiguration
 * leaves out, talking to another: never in the table, turned away by the filter). Both `_ct` programs
 * (the ones loaded on kernels with the conntrack kfuncs). With BENCH_PP_BASELINE=<an older
 * packetparser.bpf.o> (the objects are not in git: `make native` in a worktree of an earlier revision
 * builds one) the baseline runs beside this checkout's object, alternated (A B B A, BENCH_PP_ROUNDS
 * times), and the table gives both and their ratio. One JSON line per case, then a table. Needs root
 * and kernel BTF.
 */
import { cpus, loadavg, release } from 'node:os';
import { mapWriter, openBpfObject, testRunTimed, type BpfObject, type BpfProgram } from '../../src/ffi/linux/index.js';
import { FILTER_MAP, ipKey } from '../../src/plugins/linux/packetparser/maps.js';
import { envInt } from '../server/summary.js';
import { median } from '../datapath/setup.js';

const REPEAT = envInt('BENCH_PP_REPEAT', 200_000);
const ROUNDS = envInt('BENCH_PP_ROUNDS', 8);
const BASELINE = process.env['BENCH_PP_BASELINE'];
const POD = '10.0.0.2';
const PEER = '10.0.0.3';
const PROGRAMS = ['packetparser_endpoint_ingress_ct', 'packetparser_endpoint_egress_ct'];

/** Ethernet, IPv4 `src` -> `dst`, UDP 40000 -> 5201, 22 bytes of payload (64 bytes on the wire with the FCS). */
function udp64(src: string, dst: string): Uint8Array {
  const b = Buffer.alloc(14 + 20 + 8 + 22);
  b.writeUInt16BE(0x0800, 12);
  b[14] = 0x45;
  b.writeUInt16BE(20 + 8 + 22, 16);
  b[22] = 64;
  b[23] = 17;
  src.split('.').forEach((x, i) => (b[26 + i] = Number(x)));
  dst.split('.').forEach((x, i) => (b[30 + i] = Number(x)));
  b.writeUInt16BE(40000, 34);
  b.writeUInt16BE(5201, 36);
  b.writeUInt16BE(8 + 22, 38);
  return new Uint8Array(b);
}

/** One object, high aggregation, the filter holding the pod and 50 other addresses (a node's pods). */
function open(path: string | undefined): BpfObject {
  const o = openBpfObject('packetparser', { ...(path ? { path } : {}), programs: PROGRAMS, rodata: { aggregate_high: 1, report_interval_ns: 3600 * 1e9 } });
  const w = mapWriter(o.map(FILTER_MAP));
  for (const ip of [POD, ...Array.from({ length: 50 }, (_, i) => `10.1.${i}.1`)]) w.put(ipKey(ip) as Buffer, Buffer.from([1]));
  return o;
}

const load0 = loadavg();
using ours = open(undefined);
using base = BASELINE ? open(BASELINE) : undefined;
/**
 * The packets of each case as `program` sees them: on a pod veth's ingress what the veth's pod sends (it is
 * the source), on its egress what it receives (the destination).
 */
function cases(program: string): Record<string, Uint8Array> {
  const pkt = (vethPod: string, peer: string): Uint8Array => (program.includes('ingress') ? udp64(vethPod, peer) : udp64(peer, vethPod));
  return {
    'the veth\'s pod of interest': pkt(POD, PEER),
    'the veth\'s pod not, its peer of interest': pkt(PEER, POD),
    'neither of interest': pkt('10.0.0.4', '10.0.0.5'),
  };
}
const rows: Record<string, unknown>[] = [];
for (const program of PROGRAMS) {
  for (const [kind, p] of Object.entries(cases(program))) {
    const subjects: [string, BpfProgram][] = [['ours', ours.program(program)], ...(base ? [['baseline', base.program(program)] as [string, BpfProgram]] : [])];
    const got: Record<string, number[]> = Object.fromEntries(subjects.map(([n]) => [n, []]));
    for (const [, prog] of subjects) testRunTimed(prog, p, 1); // the connection's entry
    const order = [...subjects, ...[...subjects].reverse()];
    for (let r = 0; r < ROUNDS; r++) for (const [n, prog] of order) got[n]?.push(testRunTimed(prog, p, REPEAT).nsPerRun);
    const row: Record<string, unknown> = { name: 'ebpf/packetparser-run', program, packet: `UDP IPv4 64 bytes, ${kind}` };
    for (const [n] of subjects) row[`${n}Ns`] = median(got[n] ?? []);
    if (base) row['oursToBaseline'] = Number(((row['oursNs'] as number) / (row['baselineNs'] as number)).toFixed(3));
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}
console.log(`| program | packet | ours, ns a run |${base ? ' baseline, ns a run | ours / baseline |' : ''}`);
console.log(`| --- | --- | --- |${base ? ' --- | --- |' : ''}`);
for (const r of rows) console.log(`| ${String(r['program'])} | ${String(r['packet'])} | ${String(r['oursNs'])} |${base ? ` ${String(r['baselineNs'])} | ${String(r['oursToBaseline'])} |` : ''}`);
console.log(JSON.stringify({
  name: 'ebpf/packetparser-run-conditions', repeat: REPEAT, rounds: ROUNDS, kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model.trim(),
  loadavgBefore: load0, loadavgAfter: loadavg(), ...(BASELINE ? { baseline: BASELINE } : {}),
}));
