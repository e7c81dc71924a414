/**
 * The Linux capture: tcpdump, one process per interface (`-i any` when none is named; tcpdump reads
 * one `-i` only), writing `<base>.pcap` (or `<base>-<iface>.pcap`), rotating with `-C/-W` when the
 * capture has a file count. The filter is compiled with `tcpdump -d` before anything starts, so a
 * bad filter is a clear error and not a capture that dies. tcpdump's stderr goes to tcpdump.log; its
 * "N packets captured / M packets dropped by kernel" summary, printed when it is stopped, gives the
 * counts.
 */
import { spawn } from 'node:child_process';
import { appendFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { combinedFilter, type WorkloadEnv } from '../env.js';
import { CaptureError, type CaptureCounts, type RunningCapture, type StartOptions, type StreamingCapture } from '../provider.js';
import { runTool } from '../run-tool.js';

export const TCPDUMP = 'tcpdump';
/** How long tcpdump may take to say "listening on", and to exit after SIGTERM. */
const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 15_000;
/**
 * tcpdump reads the kernel's ring in blocks handed over when full or after its 1 s buffer timeout
 * (tcpdump's pcap_set_timeout); on SIGTERM it leaves the pending block unread. Waiting a little
 * longer than that timeout before stopping writes every packet seen up to the stop.
 */
export const STOP_DRAIN_MS = 1_100;

/** The interfaces tcpdump runs on: the capture's, or `any`. */
export function captureInterfaces(env: Pick<WorkloadEnv, 'interfaces'>): string[] {
  return env.interfaces.length ? [...env.interfaces] : ['any'];
}

/** The pcap file of `iface` (one interface, or `any`: `<base>.pcap`). */
export function pcapName(base: string, iface: string, count: number): string {
  return count === 1 ? `${base}.pcap` : `${base}-${iface.replace(/[^\w.-]/g, '_')}.pcap`;
}

/** tcpdump's arguments for one interface (as Retina: write as root, snap length, flags, rotation, filter). */
export function tcpdumpArgs(env: WorkloadEnv, file: string, iface: string): string[] {
  const args = ['-w', file, '-Z', 'root'];
  if (env.packetSize > 0) args.push('-s', String(env.packetSize));
  args.push(...env.tcpdumpFlags, '-i', iface);
  if (env.fileCount > 0) args.push('-C', String(env.maxSizeMb), '-W', String(env.fileCount));
  const filter = combinedFilter(env);
  if (filter) args.push(filter);
  return args;
}

/** The counts of tcpdump's exit summary (null when it printed none). */
export function parseTcpdumpSummary(stderr: string): CaptureCounts {
  const num = (re: RegExp): number | null => {
    const m = re.exec(stderr);
    return m ? Number(m[1]) : null;
  };
  return { packets: num(/(\d+) packets? captured/), dropped: num(/(\d+) packets? dropped by kernel/) };
}

/** `tcpdump -d`: the filter compiles for the first interface's link type; else a CaptureError naming the variables. */
export async function checkFilter(env: WorkloadEnv): Promise<void> {
  const filter = combinedFilter(env);
  const iface = captureInterfaces(env)[0] as string;
  const r = await runTool(TCPDUMP, ['-d', '-i', iface, ...(filter ? [filter] : [])], { timeoutMs: 20_000 });
  if (r.notFound) throw new CaptureError(`${TCPDUMP} is not installed (not found on PATH)`);
  if (r.code !== 0) {
    const why = r.stderr.trim().split('\n').filter((l) => !/^Warning:/i.test(l)).join(' ').slice(0, 500);
    const from = (['TCPDUMP_FILTER', 'TCPDUMP_RAW_FILTER', 'PCAP_FILTER'] as const).filter((k) => ({ TCPDUMP_FILTER: env.tcpdumpFilter, TCPDUMP_RAW_FILTER: env.tcpdumpRawFilter, PCAP_FILTER: env.pcapFilter })[k]);
    if (!filter) throw new CaptureError(`tcpdump cannot capture on ${JSON.stringify(iface)} (CAPTURE_INTERFACES): ${why}`);
    throw new CaptureError(`the capture filter ${JSON.stringify(filter)} (from ${from.join(', ')}) is not valid: ${why}`);
  }
}

interface Proc {
  readonly iface: string;
  readonly done: Promise<number | null>;
  stderr: string;
  kill(signal: NodeJS.Signals): void;
  readonly stdout: NodeJS.ReadableStream | null;
}

/** One tcpdump, its stderr into the log, resolved once it says "listening on"; throws CaptureError when it does not. */
async function spawnTcpdump(iface: string, args: readonly string[], stdout: 'ignore' | 'pipe', writeLog: (t: string) => void, procs: Proc[]): Promise<Proc> {
  writeLog(`$ ${TCPDUMP} ${args.map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' ')}\n`);
  const child = spawn(TCPDUMP, [...args], { stdio: ['ignore', stdout, 'pipe'] });
  let listening!: () => void;
  const ready = new Promise<void>((r) => (listening = r));
  const p: Proc = {
    iface, stderr: '', stdout: child.stdout,
    done: new Promise((resolve) => {
      child.on('error', (e) => {
        p.stderr += `${e.message}\n`;
        resolve(null);
      });
      child.on('close', (code) => resolve(code));
    }),
    kill: (sig) => child.kill(sig),
  };
  const err = child.stderr as NodeJS.ReadableStream & { setEncoding(e: string): void };
  err.setEncoding('utf8');
  err.on('data', (t: string) => {
    p.stderr = (p.stderr + t).slice(-65536);
    writeLog(t);
    if (/listening on/.test(p.stderr)) listening();
  });
  procs.push(p);
  const first = await Promise.race([ready.then(() => 'ready' as const), p.done.then(() => 'exited' as const), sleep(START_TIMEOUT_MS).then(() => 'timeout' as const)]);
  if (first !== 'ready') throw new CaptureError(`tcpdump on ${iface} ${first === 'timeout' ? `did not start within ${START_TIMEOUT_MS / 1000} s` : 'exited at once'}: ${p.stderr.trim().slice(-500)}`);
  return p;
}

/** SIGTERM (SIGKILL after STOP_TIMEOUT_MS) and the summed exit summaries. */
async function stopAll(procs: readonly Proc[], log: StartOptions['log']): Promise<CaptureCounts> {
  for (const p of procs) p.kill('SIGTERM');
  await Promise.all(procs.map(async (p) => {
    if ((await Promise.race([p.done.then(() => 'done'), sleep(STOP_TIMEOUT_MS).then(() => 'late')])) === 'late') {
      log.warn('tcpdump did not stop on SIGTERM; killing it', { interface: p.iface });
      p.kill('SIGKILL');
      await p.done;
    }
  }));
  const counts = procs.map((p) => parseTcpdumpSummary(p.stderr));
  const sum = (k: keyof CaptureCounts): number | null => (counts.every((c) => c[k] !== null) ? counts.reduce((a, c) => a + (c[k] as number), 0) : null);
  return { packets: sum('packets'), dropped: sum('dropped') };
}

const endedBy = (procs: readonly Proc[], stopping: () => boolean): Promise<string> =>
  Promise.race(procs.map((p) => p.done.then((code) => ({ p, code })))).then(async ({ p, code }) => {
    if (stopping()) return new Promise<string>(() => undefined);
    return `tcpdump on ${p.iface} ended by itself (exit ${code}): ${p.stderr.trim().slice(-300)}`;
  });

export async function startTcpdump(env: WorkloadEnv, opts: StartOptions): Promise<RunningCapture> {
  const ifaces = captureInterfaces(env);
  const procs: Proc[] = [];
  let stopping = false;
  let logChain = Promise.resolve();
  const writeLog = (text: string): void => {
    logChain = logChain.then(() => appendFile(opts.logFile, text).catch(() => undefined));
  };
  try {
    for (const iface of ifaces) {
      const args = tcpdumpArgs(env, join(opts.dir, pcapName(opts.base, iface, ifaces.length)), iface);
      opts.log.info('starting tcpdump', { interface: iface, args: args.join(' ') });
      await spawnTcpdump(iface, args, 'ignore', writeLog, procs);
    }
  } catch (e) {
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map((p) => p.done));
    throw e;
  }
  return {
    ended: endedBy(procs, () => stopping),
    async bytesWritten() {
      let total = 0;
      for (const f of await readdir(opts.dir)) if (f.startsWith(opts.base) && /\.pcap\d*$/.test(f)) total += (await stat(join(opts.dir, f)).catch(() => ({ size: 0 }))).size;
      return total;
    },
    async stop() {
      stopping = true;
      if (!env.tcpdumpFlags.includes('--immediate-mode')) await sleep(STOP_DRAIN_MS);
      const counts = await stopAll(procs, opts.log);
      await logChain;
      return counts;
    },
  };
}

/**
 * A triggered capture's tcpdump: the pcap to stdout (`-w -`), each packet handed over as it is seen
 * (`--immediate-mode`, `-U`), so the trigger finds its packet already in the ring.
 */
export function tcpdumpStreamArgs(env: WorkloadEnv, iface: string): string[] {
  const args = ['-w', '-', '-U', '--immediate-mode', '-Z', 'root'];
  if (env.packetSize > 0) args.push('-s', String(env.packetSize));
  args.push(...env.tcpdumpFlags.filter((f) => f !== '-U' && f !== '--immediate-mode'), '-i', iface);
  const filter = combinedFilter(env);
  if (filter) args.push(filter);
  return args;
}

export async function startTcpdumpStream(env: WorkloadEnv, opts: Pick<StartOptions, 'logFile' | 'log'>): Promise<StreamingCapture> {
  const iface = captureInterfaces(env)[0] as string;
  const procs: Proc[] = [];
  let stopping = false;
  let logChain = Promise.resolve();
  const writeLog = (text: string): void => {
    logChain = logChain.then(() => appendFile(opts.logFile, text).catch(() => undefined));
  };
  const args = tcpdumpStreamArgs(env, iface);
  opts.log.info('starting tcpdump (pre-trigger ring)', { interface: iface, args: args.join(' ') });
  let p: Proc;
  try {
    p = await spawnTcpdump(iface, args, 'pipe', writeLog, procs);
  } catch (e) {
    for (const x of procs) x.kill('SIGKILL');
    await Promise.all(procs.map((x) => x.done));
    throw e;
  }
  return {
    packets: p.stdout as NodeJS.ReadableStream,
    ended: endedBy(procs, () => stopping),
    async stop() {
      stopping = true;
      const counts = await stopAll(procs, opts.log);
      await logChain;
      return counts;
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());
