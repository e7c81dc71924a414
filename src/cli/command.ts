/**
 * What every command's composition root shares: flags with --help and --version, configuration
 * errors (exit 2), and a shutdown on SIGTERM/SIGINT that stops within a budget and exits anyway
 * after HARD_EXIT_MS.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getAsset, isSea } from 'node:sea';
import { ConfigErrors } from '../config/index.js';
import { errorFields, type Logger } from '../log/line/index.js';
import { parseFlags, type Flags } from './args.js';

/** How long SIGTERM may take before the process exits regardless (the contract's 10 s). */
export const HARD_EXIT_MS = 10_000;

/**
 * A file of the package (package.json, charts/...), found from the first folder above this module
 * that holds package.json: the checkout when run from dist/src/cli, the bundle's own folder when
 * bundled (hack/bundle.mjs puts package.json beside the bundle).
 */
export function packageFile(rel: string, from = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return join(dir, rel);
    if (dirname(dir) === dir) throw new Error(`cannot find the retina-ts package.json above ${from}`);
  }
}

export function version(): string {
  // A single executable (the kubectl plugin, hack/kubectl-plugin.mjs) carries package.json as an asset.
  const text = isSea() ? getAsset('package.json', 'utf8') : readFileSync(packageFile('package.json'), 'utf8');
  const pkg = JSON.parse(text) as { version: string };
  return pkg.version;
}

/** Parses flags; answers --help and --version. Returns the flags, or the exit code to end with. */
export function readCommandLine(command: string, usage: string, argv: readonly string[], strings: readonly string[], booleans: readonly string[] = []): Flags | number {
  let flags: Flags;
  try {
    flags = parseFlags(argv, {
      strings: Object.fromEntries(strings.map((s) => [s, undefined])),
      booleans: Object.fromEntries([...booleans, 'help', 'version'].map((b) => [b, false])),
      positionals: true,
    });
  } catch (e) {
    process.stderr.write(`${command}: ${(e as Error).message}\n${usage}\n`);
    return 2;
  }
  if (flags.values['help']) {
    process.stdout.write(usage + '\n');
    return 0;
  }
  if (flags.values['version']) {
    process.stdout.write(version() + '\n');
    return 0;
  }
  return flags;
}

/** Prints configuration errors (every bad key) and gives exit status 2; rethrows anything else. */
export function configErrorExit(command: string, e: unknown): number {
  if (!(e instanceof ConfigErrors)) throw e;
  process.stderr.write(`${command}: configuration error${e.errors.length > 1 ? 's' : ''}:\n${e.errors.map((x) => `  - ${x.message}`).join('\n')}\n`);
  return 2;
}

/** Resolves 'timeout' if `work` takes longer than `ms`. */
export async function within<T>(work: PromiseLike<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const budget = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => r('timeout'), ms);
    timer.unref();
  });
  try {
    return await Promise.race([work, budget]);
  } finally {
    clearTimeout(timer);
  }
}

/** A command's shutdown: SIGTERM and SIGINT are caught from the moment it exists. */
export interface Shutdown {
  /** The first signal so far (SIGTERM or SIGINT), if one came. */
  readonly signal: string | undefined;
  /**
   * Runs `stop` once the first signal has come (at once if it came during start-up) and resolves
   * with the exit code it returns (1 if it throws).
   */
  run(stop: () => Promise<number>): Promise<number>;
}

/**
 * Catches SIGTERM and SIGINT from now on, so that a signal that comes while the command is still
 * starting (a pod deleted during start-up) is not the default action, which ends the process on the
 * spot, but a clean stop as soon as there is something to stop. Once a signal came, the process
 * exits with 1 after HARD_EXIT_MS whatever stopping is doing; later signals are only logged.
 */
export function catchSignals(log: Logger): Shutdown {
  let signal: string | undefined;
  let wake!: () => void;
  const came = new Promise<void>((r) => (wake = r));
  const onSignal = (s: string): void => {
    if (signal !== undefined) {
      log.info('already shutting down', { signal: s });
      return;
    }
    signal = s;
    log.info('shutting down', { signal: s });
    setTimeout(() => {
      log.error('shutdown took too long; exiting', { afterMs: HARD_EXIT_MS });
      process.exit(1);
    }, HARD_EXIT_MS).unref();
    wake();
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
  return {
    get signal() {
      return signal;
    },
    async run(stop) {
      await came;
      try {
        const code = await stop();
        log.info('stopped', { exitCode: code });
        return code;
      } catch (e) {
        log.error('stopped with errors', { error: e instanceof Error ? errorFields(e) : String(e) });
        return 1;
      }
    },
  };
}

/** Exit status after an uncaught exception or unhandled rejection (EX_SOFTWARE: a bug). */
export const EXIT_FATAL = 70;
/** How long the best-effort cleanup after a fatal error may take before the process exits. */
export const FATAL_CLEANUP_MS = 3_000;

/** How many errors after the fatal one are logged. */
const MAX_LATER_LOGGED = 3;

/** What a command knows about a fatal error: the process is on its way out. */
export interface Fatal {
  /** The fatal error's message, once one happened (for /healthz). */
  readonly error: string | undefined;
  /** What to release before exiting (detach hooks, release the Lease); replaced by a later call. */
  onExit(cleanup: () => Promise<unknown>): void;
}

/**
 * An uncaught exception or an unhandled rejection leaves the process in a state nobody planned
 * for, so it is not swallowed: it is logged with its stack, `cleanup` runs for at most `cleanupMs`
 * (best effort: kernel hooks are detached, a Lease released), and the process exits with
 * EXIT_FATAL so that the kubelet restarts it. A second one during the cleanup is only logged.
 */
export function exitOnFatal(log: Logger, cleanupMs = FATAL_CLEANUP_MS): Fatal {
  let error: string | undefined;
  let cleanup: (() => Promise<unknown>) | undefined;
  let later = 0;
  const onFatal = (kind: string, e: unknown): void => {
    const fields = { error: e instanceof Error ? errorFields(e) : String(e) };
    if (error !== undefined) {
      // A few are logged, not all: when logging is what fails (a log stream that errors on each
      // write), logging each one makes the next, and the exit would never come.
      if (++later <= MAX_LATER_LOGGED) log.error(`${kind} while exiting after a fatal error`, fields);
      return;
    }
    error = `${kind}: ${e instanceof Error ? e.message : String(e)}`;
    // Also if the event loop runs dry before the cleanup is done.
    process.exitCode = EXIT_FATAL;
    log.error(`${kind}; cleaning up and exiting`, { ...fields, exitCode: EXIT_FATAL, cleanupMs });
    const run = cleanup;
    void (async () => {
      const outcome = await within(Promise.resolve().then(() => run?.()), cleanupMs).catch((err: unknown) => err);
      if (outcome === 'timeout') log.error('cleanup after the fatal error took too long', { cleanupMs });
      else if (outcome instanceof Error) log.error('cleanup after the fatal error failed', { error: errorFields(outcome) });
      // Let the log lines reach stderr before exiting.
      setImmediate(() => process.exit(EXIT_FATAL));
    })();
  };
  process.on('uncaughtException', (e) => onFatal('uncaught exception', e));
  process.on('unhandledRejection', (e) => onFatal('unhandled rejection', e));
  return {
    get error() {
      return error;
    },
    onExit(fn) {
      cleanup = fn;
    },
  };
}

/** The start-up snapshot node was started from: `--snapshot-blob B` or `--snapshot-blob=B` in its `execArgv`. */
export function snapshotBlob(execArgv: readonly string[]): string | undefined {
  for (let i = 0; i < execArgv.length; i++) {
    const a = execArgv[i] as string;
    if (a === '--snapshot-blob') return execArgv[i + 1];
    if (a.startsWith('--snapshot-blob=')) return a.slice('--snapshot-blob='.length);
  }
  return undefined;
}

/**
 * How every command ends (src/cli/*-main.ts, agent-snapshot.ts): `code` as the exit status, and, since
 * everything was released, an exit 1 s later if a stray handle still holds the event loop.
 */
export function exitWhenDone(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 1000).unref();
}
