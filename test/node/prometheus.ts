/**
 * Debian's Prometheus for the real-node suite: started with a config, asked through its HTTP API,
 * stopped (and its directory removed) by dispose.
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { connect } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../integration/harness.js';

export interface Prometheus extends AsyncDisposable {
  readonly dir: string;
  api(path: string, params?: Record<string, string>): Promise<{ status: string; data: unknown }>;
  /** The active targets once every one was scraped at least once. */
  targets(timeoutMs?: number): Promise<{ labels: Record<string, string>; health: string; scrapeUrl: string; lastError: string }[]>;
}

/** Whether something already listens on `host:port` (a connection is accepted). */
function listening(listen: string): Promise<boolean> {
  const i = listen.lastIndexOf(':');
  return new Promise((resolve) => {
    const c = connect({ host: listen.slice(0, i), port: Number(listen.slice(i + 1)) });
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

/**
 * Starts Prometheus on `listen` with `config(dir)` (dir: its own directory, for files the config names).
 * Fails at once when something already listens there: an orphan Prometheus of a run killed by hand
 * would otherwise answer this one's queries. With `netns`, Prometheus runs in that network namespace (a
 * test's own, fresh: nothing listens there before) and is asked there (curl inside it).
 */
export async function startPrometheus(listen: string, config: (dir: string) => unknown, opts: { netns?: string } = {}): Promise<Prometheus> {
  if (!opts.netns && (await listening(listen))) throw new Error(`${listen} is in use before Prometheus starts (an orphan of a killed run? ss -ltnp 'sport = :${listen.slice(listen.lastIndexOf(':') + 1)}')`);
  const inNs = (argv: string[]): [string, string[]] => (opts.netns ? ['ip', ['netns', 'exec', opts.netns, ...argv]] : [argv[0] as string, argv.slice(1)]);
  const dir = mkdtempSync(join(tmpdir(), 'rn-prom-'));
  writeFileSync(join(dir, 'prometheus.yml'), JSON.stringify(config(dir)));
  const prom = spawn(...inNs(['prometheus', `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=${listen}`, '--log.level=warn']), { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  prom.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise((r) => prom.once('exit', r));
  const url = (path: string, params: Record<string, string>): string => `http://${listen}${path}?${new URLSearchParams(params).toString()}`;
  const api = async (path: string, params: Record<string, string> = {}): Promise<{ status: string; data: unknown }> => {
    if (prom.exitCode !== null) throw new Error(`prometheus exited ${prom.exitCode}: ${err.slice(-2000)}`);
    if (opts.netns) return JSON.parse((await promisify(execFile)(...inNs(['curl', '-sSf', url(path, params)]))).stdout) as { status: string; data: unknown };
    const r = await fetch(url(path, params));
    return (await r.json()) as { status: string; data: unknown };
  };
  type Target = Awaited<ReturnType<Prometheus['targets']>>[number];
  return {
    dir,
    api,
    targets: (timeoutMs = 60_000) => eventually('the scrape job\'s targets scraped', timeoutMs, async () => {
      const a = ((await api('/api/v1/targets')).data as { activeTargets: Target[] }).activeTargets;
      return a.length > 0 && a.every((x) => x.health !== 'unknown') && a;
    }, 1000),
    async [Symbol.asyncDispose]() {
      if (prom.exitCode === null) prom.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
