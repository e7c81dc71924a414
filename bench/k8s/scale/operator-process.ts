/**
 * A real `retina-operator` process for the scale bench (bin/retina-operator's entry point on this
 * node), with leader election on, remote context on, its /metrics on a loopback port; what it costs is
 * read from /proc (CPU: utime + stime of every thread; RSS).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../../test/e2e/agent-process.js';
import { parseExposition, series } from '../../../test/e2e/exposition.js';
import { cpuSeconds, rssSplit } from '../../../test/e2e/proc-stats.js';

/** This checkout's operator. */
export const THIS_BUILD = fileURLToPath(new URL('../../../src/cli/operator-main.js', import.meta.url));

export interface OperatorFigures {
  readonly leader: boolean;
  readonly writes: number;
  readonly reconciles: number;
  readonly errors: number;
  readonly depth: number;
  /** Writes by verb (create, patch, delete). */
  readonly byVerb: Record<string, number>;
}

export class OperatorProcess implements AsyncDisposable {
  readonly #child: ChildProcess;
  readonly #port: number;
  #log = '';
  exited = false;

  private constructor(readonly name: string, child: ChildProcess, port: number) {
    this.#child = child;
    this.#port = port;
    const keep = (c: Buffer): void => {
      this.#log = (this.#log + c.toString('utf8')).slice(-20_000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.once('exit', () => {
      this.exited = true;
    });
  }

  /** Starts `main` (an operator-main.js: this build's, or another build's for a before/after comparison). */
  static async start(name: string, kubeconfig: string, leaseId: string, main = THIS_BUILD, env: Record<string, string> = {}): Promise<OperatorProcess> {
    const [port, probe] = [await freePort(), await freePort()];
    const child = spawn(process.execPath, [main, '--kubeconfig', kubeconfig, '--metrics-addr', `127.0.0.1:${port}`, '--probe-addr', `127.0.0.1:${probe}`], {
      env: { ...process.env, RETINA_REMOTECONTEXT: 'true', RETINA_LEADERELECTIONID: leaseId, RETINA_LOGLEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    return new OperatorProcess(name, child, port);
  }

  get pid(): number {
    return this.#child.pid as number;
  }

  /** The last lines it logged (for a failure's explanation). */
  get log(): string {
    return this.#log.split('\n').slice(-15).join('\n');
  }

  cpuSeconds(): number {
    return cpuSeconds(this.pid);
  }

  rssMB(): number {
    return rssSplit(this.pid).rssMB;
  }

  async figures(): Promise<OperatorFigures> {
    const res = await fetch(`http://127.0.0.1:${this.#port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    const e = parseExposition(await res.text());
    const sum = (name: string, labels: Record<string, string> = {}): number => series(e, name, labels).reduce((s, x) => s + x.value, 0);
    return {
      leader: sum('leader_election_master_status') === 1,
      writes: sum('retina_operator_api_writes_total', { resource: 'retinaendpoints' }),
      reconciles: sum('controller_runtime_reconcile_total', { controller: 'retinaendpoint' }),
      errors: sum('controller_runtime_reconcile_errors_total', { controller: 'retinaendpoint' }),
      depth: sum('workqueue_depth', { name: 'retinaendpoint' }),
      byVerb: Object.fromEntries(series(e, 'retina_operator_api_writes_total', { resource: 'retinaendpoints' }).map((x) => [x.labels['verb'], x.value])),
    };
  }

  /** SIGKILL: a leader that dies without releasing its Lease (a node lost, an OOM kill). */
  async kill(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.#child.once('exit', r));
    this.#child.kill('SIGKILL');
    await gone;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.exited) return;
    const gone = new Promise((r) => this.#child.once('exit', r));
    this.#child.kill('SIGTERM');
    const t = setTimeout(() => this.#child.kill('SIGKILL'), 15_000);
    await gone;
    clearTimeout(t);
  }
}
