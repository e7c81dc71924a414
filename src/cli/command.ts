/**
 * What every command's composition root shares: flags with --help and --version, configuration
 * errors (exit 2), and a shutdown on SIGTERM/SIGINT that stops within a budget and exits anyway
 * after HARD_EXIT_MS.
 */
import { readFileSync } from 'node:fs';
import { ConfigErrors } from '../config/index.js';
import { errorFields, type Logger } from '../log/index.js';
import { parseFlags, type ParsedArgs } from './args.js';

/** How long SIGTERM may take before the process exits regardless (the contract's 10 s). */
export const HARD_EXIT_MS = 10_000;

export function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** Parses flags; answers --help and --version. Returns the flags, or the exit code to end with. */
export function readCommandLine(command: string, usage: string, argv: readonly string[], strings: readonly string[], booleans: readonly string[] = []): ParsedArgs | number {
  let flags: ParsedArgs;
  try {
    flags = parseFlags(argv, strings, booleans);
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
