/**
 * Runs `bin/retina-agent` as a real child process for the end-to-end test and the idle benchmark:
 * collects its stderr log lines, waits for lines by predicate, scrapes its HTTP endpoints on
 * loopback, and always leaves nothing running (SIGKILL as the last resort on dispose).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { request } from 'node:http';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/** The checkout's root: this file runs from dist/test/e2e/. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const AGENT_BIN = `${ROOT}bin/retina-agent`;

/** The node binary the shim would pick (the pinned .cache/node one when present). */
export function nodeBinary(): string {
  const pinned = `${ROOT}.cache/node/bin/node`;
  return existsSync(pinned) ? pinned : 'node';
}

export interface LogLine {
  readonly time: string;
  readonly level: string;
  readonly msg: string;
  readonly component: string;
  readonly [field: string]: unknown;
}

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** The parent's environment without any RETINA_* variable, plus `extra`. */
export function agentEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('RETINA_')) env[k] = v;
  return { ...env, ...extra };
}

export class AgentProcess implements AsyncDisposable {
  readonly child: ChildProcess;
  readonly exited: Promise<Exit>;
  /** Every complete stderr line, in order. */
  readonly stderrLines: string[] = [];
  stdout = '';
  #exit: Exit | undefined;
  #partial = '';
  #waiters = new Set<() => void>();

  constructor(opts: { args?: readonly string[]; env?: NodeJS.ProcessEnv; command?: readonly string[] } = {}) {
    const [cmd, ...pre] = opts.command ?? [AGENT_BIN];
    this.child = spawn(cmd as string, [...pre, ...(opts.args ?? [])], { env: opts.env ?? agentEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout?.setEncoding('utf8').on('data', (s: string) => (this.stdout += s));
    this.child.stderr?.setEncoding('utf8').on('data', (s: string) => {
      const parts = (this.#partial + s).split('\n');
      this.#partial = parts.pop() ?? '';
      this.stderrLines.push(...parts);
      this.#wake();
    });
    this.exited = new Promise((resolve, reject) => {
      this.child.once('error', reject);
      this.child.once('close', (code, signal) => {
        if (this.#partial) this.stderrLines.push(this.#partial);
        this.#partial = '';
        this.#exit = { code, signal };
        this.#wake();
        resolve(this.#exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid as number;
  }

  get exit(): Exit | undefined {
    return this.#exit;
  }

  get stderr(): string {
    return this.stderrLines.join('\n');
  }

  /** Stderr lines parsed as JSON; throws on the first line that is not a JSON object. */
  logLines(): LogLine[] {
    return this.stderrLines.filter((l) => l.trim() !== '').map((l) => {
      const v = JSON.parse(l) as unknown;
      if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`stderr line is not a JSON object: ${l}`);
      return v as LogLine;
    });
  }

  /** Resolves with the first log line matching `pred`; rejects if the process exits or time runs out. */
  async waitForLog(pred: (l: LogLine) => boolean, what: string, timeoutMs = 15_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (const l of this.stderrLines) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(l);
        } catch {
          continue;
        }
        if (parsed !== null && typeof parsed === 'object' && pred(parsed as LogLine)) return parsed as LogLine;
      }
      if (this.#exit) throw new Error(`agent exited (${JSON.stringify(this.#exit)}) before logging ${what}; stderr:\n${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no log line ${what} within ${timeoutMs} ms; stderr:\n${this.stderr}`);
      await this.#change(left);
    }
  }

  /** The port from the "http server listening" line. */
  async listening(timeoutMs = 15_000): Promise<number> {
    const l = await this.waitForLog((x) => x.msg === 'http server listening', '"http server listening"', timeoutMs);
    if (typeof l['port'] !== 'number' || l['port'] <= 0) throw new Error(`listening line has no port: ${JSON.stringify(l)}`);
    return l['port'];
  }

  /** Resolves with the exit status; rejects (after SIGKILL) if the process lives longer than `timeoutMs`. */
  async waitExit(timeoutMs: number): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.child.kill('SIGKILL');
        reject(new Error(`agent did not exit within ${timeoutMs} ms; stderr:\n${this.stderr}`));
      }, timeoutMs);
    });
    try {
      return await Promise.race([this.exited, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#exit) return;
    this.child.kill('SIGTERM');
    try {
      await this.waitExit(12_000);
    } catch {
      // Killed by waitExit; the test that owned it reports its own failure.
      await this.exited.catch(() => undefined);
    }
  }

  #wake(): void {
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  /** Resolves on the next stderr line or exit, or after `timeoutMs`. */
  #change(timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.#waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, timeoutMs);
      this.#waiters.add(done);
    });
  }
}

export interface HttpResult {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

/** GET http://127.0.0.1:<port><path> on a fresh connection. */
export function get(port: number, path: string, timeoutMs = 10_000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out after ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** Polls `probe` every `everyMs` until it returns a value other than undefined. */
export async function eventually<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 15_000, everyMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
      last = undefined;
    } catch (e) {
      last = e;
    }
    if (Date.now() >= deadline) {
      const why = last instanceof Error ? `: ${last.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A loopback TCP port free right now (for a process that must be told its port before it starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}
