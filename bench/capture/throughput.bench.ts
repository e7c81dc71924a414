/**
 * Capture throughput without kernel drops: the real capture workload (`retina-capture`, tcpdump) on
 * the receiving end of a veth pair between two namespaces, while pktgen (bench/datapath/pktgen.c) sends UDP at increasing
 * rates (each rate doubles the last). Per rate: the packets pktgen sent, the packets in the pcap
 * (read back with `tcpdump -r`), and the manifest's `packets`/`dropped` (tcpdump's "dropped by
 * kernel"). Prints one JSON line with the highest rate at which nothing was dropped and the pcap holds
 * every packet sent, and the first rate with drops, per payload size. Env: BENCH_CAPTURE_SECONDS (3 per rate),
 * BENCH_CAPTURE_PAYLOADS (512,1400 bytes of UDP payload), BENCH_CAPTURE_START_PPS (5000),
 * BENCH_CAPTURE_MAX_PPS (640000). Needs root, clang (pktgen), tcpdump.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Netns, vethPair } from '../../test/ebpf/netns.js';
import { pktgen } from '../datapath/pods.js';
import { extract, runWorkload, sh } from '../../test/capture/workload-run.js';

const SECONDS = Number(process.env['BENCH_CAPTURE_SECONDS'] ?? 3);
const PAYLOADS = (process.env['BENCH_CAPTURE_PAYLOADS'] ?? '512,1400').split(',').map(Number);
const START = Number(process.env['BENCH_CAPTURE_START_PPS'] ?? 5000);
const MAX = Number(process.env['BENCH_CAPTURE_MAX_PPS'] ?? 640_000);
const PORT = 5201;
const frame = (payload: number): number => payload + 8 + 20 + 14; // UDP + IPv4 + Ethernet headers: the bytes on the wire

interface Step { targetPps: number; sentPps: number; sentMbps: number; sent: number; inPcap: number; manifestPackets: number | null; dropped: number | null; clean: boolean }

const client = new Netns('cq-tpc');
const server = new Netns('cq-tps');
const gen = pktgen();
const base = mkdtempSync(join(tmpdir(), 'cq-tp-'));
const load0 = loadavg();

/** One rate: the workload captures while pktgen sends `pps` datagrams of `payload` bytes for SECONDS. */
async function measure(pps: number, payload: number): Promise<Step> {
  const hostPath = join(base, `r${pps}-${payload}`);
  const w = runWorkload({
    CAPTURE_NAME: 'tp', NODE_HOST_NAME: 'bench', CAPTURE_DURATION: '10m', CAPTURE_MAX_SIZE: '4000', CAPTURE_INTERFACES: 'cq-tp-s',
    INCLUDE_METADATA: 'false', PCAP_FILTER: `udp and dst port ${PORT}`, HOSTPATH: hostPath, RETINA_CAPTURE_HOSTPATH_BASE_DIR: base,
  }, { netns: server.name });
  await w.capturing;
  // a sink so the datagrams are received (no ICMP port unreachable), then pktgen sends from the client
  const sink = spawn('ip', ['netns', 'exec', server.name, gen, 'sink', String(SECONDS + 2), String(PORT)], { stdio: 'ignore' });
  await new Promise((res) => setTimeout(res, 200));
  const out = sh(gen, ['send', String(SECONDS), String(pps), String(payload), '10.236.1.2', String(PORT), client.name]);
  const sent = Number(/sent (\d+)/.exec(out)?.[1] ?? NaN);
  sink.kill('SIGTERM');
  await new Promise((res) => setTimeout(res, 500)); // the last packets through tcpdump's buffer
  w.child.kill('SIGTERM');
  const done = await w.done;
  if (done.code !== 0) throw new Error(`retina-capture exited ${done.code}: ${done.termination}${done.stderr}`);
  const tarball = readdirSync(hostPath).find((f) => f.endsWith('.tar.gz')) as string;
  const x = extract(join(hostPath, tarball));
  const pcap = x.manifest.files.find((f) => f.name.endsWith('.pcap'))?.name as string;
  const inPcap = Number(sh('sh', ['-c', `tcpdump -r '${join(x.folder, pcap)}' -nn -q 2>/dev/null | wc -l`]).trim());
  rmSync(hostPath, { recursive: true, force: true });
  rmSync(x.folder, { recursive: true, force: true });
  const step: Step = {
    targetPps: pps, sentPps: Math.round(sent / SECONDS), sentMbps: Number(((sent * frame(payload) * 8) / SECONDS / 1e6).toFixed(1)), sent,
    inPcap, manifestPackets: x.manifest.packets, dropped: x.manifest.dropped, clean: x.manifest.dropped === 0 && inPcap === sent,
  };
  process.stderr.write(`# ${payload} B: ${JSON.stringify(step)}\n`);
  return step;
}

const results = [];
try {
  vethPair(client, 'cq-tp-c', '10.236.1.1', server, 'cq-tp-s', '10.236.1.2');
  for (const payload of PAYLOADS) {
    const steps: Step[] = [];
    let senderLimited = false;
    // doubling rates until the first drop (or until the sender reaches no higher rate)
    for (let pps = START; pps <= MAX; pps *= 2) {
      const step = await measure(pps, payload);
      steps.push(step);
      if (!step.clean) break;
      if (step.sentPps < pps * 0.9) {
        senderLimited = true;
        break;
      }
    }
    // then two halvings of the interval between the last clean rate and the first with drops
    for (let i = 0; i < 2; i++) {
      const lo = steps.filter((s) => s.clean).reduce((m, s) => Math.max(m, s.targetPps), 0);
      const hi = steps.filter((s) => !s.clean).reduce((m, s) => Math.min(m, s.targetPps), Infinity);
      if (!lo || hi === Infinity) break;
      steps.push(await measure(Math.round((lo + hi) / 2), payload));
    }
    const clean = steps.filter((s) => s.clean).sort((a, b) => b.sentPps - a.sentPps)[0];
    const first = steps.filter((s) => !s.clean).sort((a, b) => a.sentPps - b.sentPps)[0];
    results.push({
      payload, frame: frame(payload),
      maxCleanPps: clean?.sentPps ?? 0, maxCleanMbps: clean?.sentMbps ?? 0,
      firstDropPps: first?.sentPps ?? null, firstDropMbps: first?.sentMbps ?? null,
      firstDrop: first ? { dropped: first.dropped, missingFromPcap: first.sent - first.inPcap } : null,
      senderLimited, steps,
    });
  }
} finally {
  client.destroy();
  server.destroy();
  rmSync(base, { recursive: true, force: true });
}
console.log(JSON.stringify({
  name: 'capture/throughput',
  fixture: `retina-capture (tcpdump, filter 'udp and dst port ${PORT}', full packets) on the receiving veth of a namespace pair; pktgen (bench/datapath/pktgen.c, sendmmsg paced every ms), payloads ${PAYLOADS.join('/')} B, ${SECONDS} s per rate, doubling from ${START} pps, then two halvings`,
  conditions: { kernel: release(), cpus: cpus().length, cpu: cpus()[0]?.model, loadavgBefore: load0.map((l) => Number(l.toFixed(2))), loadavgAfter: loadavg().map((l) => Number(l.toFixed(2))) },
  results,
}));
