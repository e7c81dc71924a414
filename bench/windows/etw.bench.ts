/**
 * PktMon events through the ETW layer under Wine, side by side in one run: the native consumer
 * (native-windows/retina-etw.dll, the default) at paced rates against the koffi callback path (the
 * fallback) as fast as it goes, both feeding the pktmon plugin's decode as the agent runs it. The
 * events come from the fake ETW DLL (test/windows/fakes/fakeetw.c: the synthetic fixture events,
 * replayed from the ProcessTrace thread). Runs bench/windows/etw-wine.ts with the Windows build of
 * Node.js under Wine (`make windows-prep` prepares it; `make bench` does). Prints a table and one
 * JSON line: decoded events/s, events lost, CPU µs per event (process, and the JS thread's part),
 * and the native/callback ratios. Goal (issue 25): at least 200 000 events/s decoded, none lost.
 * `perCoreCapacity` is 10^6 / the JS thread's CPU µs per event: the rate one core's worth of the JS
 * thread would decode (on a shared machine the decoded rate is bounded by the share of a core the
 * Wine process gets, which the CPU figures are not).
 * BENCH_ETW_EVENTS (600 000 per native run), BENCH_ETW_RATES (100000,150000,200000,250000,400000),
 * BENCH_ETW_CALLBACK_EVENTS (60 000 per callback run), BENCH_ETW_ROUNDS (2: each round one callback
 * run and the native rates, in alternating order), after a warm-up run of each that is not reported.
 * Node runs with the agent's flags (bin/retina-agent's: a 2 MB young generation).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { agentNodeFlags } from '../../test/bundle/serving.js';
import type { EtwRun } from './etw-wine.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CACHE = `${ROOT}.cache/windows`;
const NODE_VERSION = /^NODE_VERSION := (\S+)$/m.exec(readFileSync(`${ROOT}Makefile`, 'utf8'))?.[1];
const win = (p: string): string => `Z:${p.replaceAll('/', '\\')}`;
const nodeExe = `${CACHE}/node-${NODE_VERSION}/node.exe`;
const rounds = Number(process.env['BENCH_ETW_ROUNDS'] ?? 2);

for (const [what, path] of [
  ['the Windows node', nodeExe], ['the Wine prefix', `${CACHE}/prefix/.win10`], ['the fake ETW DLL', `${CACHE}/fakes/fakeetw.dll`],
  ['the native ETW consumer', `${ROOT}native-windows/retina-etw.dll`],
] as const) {
  if (!existsSync(path)) throw new Error(`bench/windows/etw: missing ${what} (${path}): run make windows-prep`);
}
const result = `${CACHE}/etw-bench.json`;
const log = `${CACHE}/etw-bench.out`;
const { NODE_TEST_CONTEXT: _ctx, ...parentEnv } = process.env;
// node.exe with the agent's flags (the Windows image's entrypoint has them too)
const r = spawnSync('sh', ['-c', 'out=$1; shift; exec wine "$@" >"$out" 2>&1', 'sh', log, nodeExe, ...agentNodeFlags(), 'dist/bench/windows/etw-wine.js', win(result)], {
  cwd: ROOT,
  stdio: 'inherit',
  timeout: 900_000,
  env: {
    ...parentEnv,
    WINEPREFIX: `${CACHE}/prefix`, WINEDEBUG: '-all', WINEDLLOVERRIDES: 'mscoree,mshtml=',
    RETINATS_DLL_ADVAPI32: win(`${CACHE}/fakes/fakeetw.dll`),
    FAKE_PKTMON_EVENTS: win(`${ROOT}test/fixtures/windows/pktmon-events.txt`),
  },
});
if (r.status !== 0) throw new Error(`the Windows side exited ${r.status}${r.error ? ` (${r.error.message})` : ''}:\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-4000) : ''}`);
const runs = JSON.parse(readFileSync(result, 'utf8')) as EtwRun[];
const cb = runs.filter((x) => x.consumer === 'callback');
const cbRate = Math.max(...cb.map((x) => x.decodedPerSecond));
const cbCpu = Math.min(...cb.map((x) => x.cpuUsPerEvent));
const pad = (s: string | number, n: number): string => String(s).padStart(n);
process.stderr.write(`${pad('consumer', 9)} ${pad('paced at/s', 11)} ${pad('events', 9)} ${pad('decoded/s', 10)} ${pad('lost', 8)} ${pad('CPU µs/ev', 10)} ${pad('JS µs/ev', 9)} ${pad('drain µs/ev', 12)}\n`);
for (const x of runs) {
  process.stderr.write(`${pad(x.consumer, 9)} ${pad(x.pacedAt || 'unpaced', 11)} ${pad(x.events, 9)} ${pad(x.decodedPerSecond, 10)} ${pad(x.lost, 8)} ${pad(x.cpuUsPerEvent, 10)} ${pad(x.jsCpuUsPerEvent, 9)} ${pad(x.drainUsPerEvent, 12)}\n`);
}
const native = runs.filter((x) => x.consumer === 'native');
const bestLossless = native.filter((x) => x.lost === 0).reduce((m, x) => (x.decodedPerSecond > m ? x.decodedPerSecond : m), 0);
const summary = {
  bench: 'windows-etw',
  rounds,
  callbackDecodedPerSecond: cbRate,
  callbackCpuUsPerEvent: cbCpu,
  nativeBestLosslessDecodedPerSecond: bestLossless,
  nativeVsCallbackRate: Number((bestLossless / cbRate).toFixed(1)),
  nativeCpuUsPerEvent: Math.min(...native.map((x) => x.cpuUsPerEvent)),
  callbackVsNativeCpu: Number((cbCpu / Math.min(...native.map((x) => x.cpuUsPerEvent))).toFixed(1)),
  nativePerCoreCapacity: Math.round(1e6 / Math.min(...native.map((x) => x.jsCpuUsPerEvent))),
  callbackPerCoreCapacity: Math.round(1e6 / Math.min(...cb.map((x) => x.jsCpuUsPerEvent))),
  goal200kLossless: bestLossless >= 200_000,
  loadAverage: loadavg().map((x) => Number(x.toFixed(1))),
  runs,
};
process.stdout.write(`${JSON.stringify(summary)}\n`);
