/**
 * The Windows capture: pktmon. The Job's NETSH_FILTER addresses become pktmon filters (`pktmon
 * filter add <name> -i <ip>`, one per address, which matches it as source or destination), after
 * the filters left by an earlier run are removed; `pktmon start --capture --file-name <etl>
 * [--pkt-size N] --file-size <MB>` captures, `pktmon stop` stops, and `pktmon etl2pcap <etl> --out
 * <pcap>` converts. pktmon runs through cmd.exe (as vfpctrl does), so a `.cmd` stand-in works too.
 * tcpdump-style filters do not apply on Windows (as in Retina); they are logged as ignored.
 */
import { execFile } from 'node:child_process';
import { appendFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../log/index.js';
import { combinedFilter, parseNetshFilter, type WorkloadEnv } from '../env.js';
import { countPackets } from '../pcap.js';
import { CaptureError, type CaptureProvider, type RunningCapture, type StartOptions } from '../provider.js';

/** Prefix of the pktmon filters this workload adds. */
export const FILTER_PREFIX = 'retina-capture';

/** The pktmon command lines of a capture, in order (fixtures test them). */
export function pktmonCommands(env: WorkloadEnv, etl: string): { filters: string[][]; start: string[] } {
  const filters = [['filter', 'remove'], ...parseNetshFilter(env.netshFilter).map((ip, i) => ['filter', 'add', `${FILTER_PREFIX}-${i + 1}`, '-i', ip])];
  const start = ['start', '--capture', '--file-name', etl];
  if (env.packetSize > 0) start.push('--pkt-size', String(env.packetSize));
  start.push('--file-size', String(env.maxSizeMb));
  return { filters, start };
}

/** pktmon etl2pcap's loss count, when it prints one ("Packets lost: N", "Packet drop count: N"). */
export function parseEtl2pcapDrops(out: string): number | null {
  const m = /(?:lost|drop(?:ped)?(?: count)?)\s*:\s*(\d+)/i.exec(out);
  return m ? Number(m[1]) : null;
}

const quote = (a: string): string => (/^[\w.:\\/=-]+$/.test(a) ? a : `"${a.replaceAll('"', '')}"`);

export interface PktmonResult {
  readonly code: number | null;
  readonly output: string;
}

/** `pktmon <args>` through cmd.exe; the output (stdout and stderr) also goes to the log file. */
export function pktmon(args: readonly string[], logFile: string, timeoutMs = 120_000): Promise<PktmonResult> {
  const line = ['pktmon', ...args.map(quote)].join(' ');
  return new Promise((resolve) => {
    execFile('cmd.exe', ['/d', '/s', '/c', `"${line}"`], { timeout: timeoutMs, windowsHide: true, windowsVerbatimArguments: true, maxBuffer: 8 << 20, encoding: 'utf8' }, (err, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : null) : 0;
      void appendFile(logFile, `> ${line}\n${output}${code !== 0 ? `(exit ${code ?? err?.message})\n` : ''}`).catch(() => undefined).then(() => resolve({ code, output }));
    });
  });
}

export interface WindowsProviderOptions {
  /** The HNS networks and endpoints (src/platform/windows: the diagnose section `hns`). */
  readonly hnsState?: () => unknown;
  /** Commands whose output goes to metadata/<name>.txt (run through cmd.exe). */
  readonly commands?: Readonly<Record<string, string>>;
}

export const WINDOWS_METADATA_COMMANDS: Readonly<Record<string, string>> = {
  ipconfig: 'ipconfig /all', routes: 'route print', netstat: 'netstat -ano', 'pktmon-components': 'pktmon list',
};

async function start(env: WorkloadEnv, opts: StartOptions): Promise<RunningCapture> {
  const etl = join(opts.dir, `${opts.base}.etl`);
  const pcap = join(opts.dir, `${opts.base}.pcap`);
  const cmds = pktmonCommands(env, etl);
  for (const args of cmds.filters) {
    const r = await pktmon(args, opts.logFile);
    // `filter remove` with nothing to remove is fine; a filter that cannot be added is not.
    if (r.code !== 0 && args[1] === 'add') throw new CaptureError(`pktmon filter add for ${args[4]} (from NETSH_FILTER) failed: ${r.output.trim().slice(0, 300)}`);
  }
  const r = await pktmon(cmds.start, opts.logFile);
  if (r.code !== 0) throw new CaptureError(`pktmon start failed (exit ${r.code}): ${r.output.trim().slice(0, 300)}`);
  opts.log.info('pktmon started', { args: cmds.start.join(' ') });
  return {
    ended: new Promise(() => undefined),
    bytesWritten: async () => (await stat(etl).catch(() => ({ size: 0 }))).size,
    async stop() {
      const s = await pktmon(['stop'], opts.logFile);
      if (s.code !== 0) opts.log.warn('pktmon stop failed', { output: s.output.trim().slice(0, 300) });
      const c = await pktmon(['etl2pcap', etl, '--out', pcap], opts.logFile);
      const converted = await stat(pcap).then(() => true, () => false);
      if (c.code !== 0 || !converted) throw new CaptureError(`pktmon etl2pcap failed (exit ${c.code}); the .etl is kept: ${c.output.trim().slice(0, 300)}`);
      await rm(etl, { force: true });
      return { packets: await countPackets(pcap).catch(() => null), dropped: parseEtl2pcapDrops(c.output) };
    },
  };
}

async function collect(dir: string, log: Logger, o: WindowsProviderOptions): Promise<void> {
  if (o.hnsState) {
    let doc: unknown;
    try {
      doc = await o.hnsState();
    } catch (e) {
      doc = { error: (e as Error).message };
      log.warn('HNS state failed', { error: (e as Error).message });
    }
    await writeFile(join(dir, 'hns.json'), JSON.stringify(doc, null, 2));
  }
  for (const [name, line] of Object.entries(o.commands ?? WINDOWS_METADATA_COMMANDS)) {
    const out = await new Promise<string>((resolve) => {
      execFile('cmd.exe', ['/d', '/s', '/c', `"${line}"`], { timeout: 30_000, windowsHide: true, windowsVerbatimArguments: true, maxBuffer: 16 << 20, encoding: 'utf8' }, (err, stdout, stderr) => {
        resolve(`> ${line}\n${stdout}${err ? `# failed: ${err.message}${stderr ? `: ${stderr.trim().slice(0, 300)}` : ''}\n` : ''}`);
      });
    });
    await writeFile(join(dir, `${name}.txt`), out);
  }
}

export function windowsCaptureProvider(o: WindowsProviderOptions = {}): CaptureProvider {
  return {
    os: 'windows',
    logName: 'pktmon.log',
    limitsSize: () => false,
    async check(env, log) {
      const f = combinedFilter(env);
      if (f) log.warn('tcpdump filters do not apply on Windows; only NETSH_FILTER addresses filter the capture', { filter: f });
    },
    start,
    collectMetadata: (dir, log) => collect(dir, log, o),
  };
}
