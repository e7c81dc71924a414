/**
 * The one flag parser of every command (retina-agent, its diagnose, retina-operator, retina-capture,
 * kubectl-retina capture create|list|delete|download), kubectl (cobra/pflag) style: `--flag value`,
 * `--flag=value`, booleans as `--flag` or `--flag=true|false`, one-letter aliases (`-n NS`, `-A`,
 * `-o DIR`, `-h`), the last of a repeated flag wins, a value may start with a dash.
 *
 * It is node:util parseArgs, run non-strict with `tokens: true`: parseArgs splits the command line
 * (inline values, short flags and short groups, `--`), and this module checks each token. parseArgs'
 * strict mode cannot take kubectl's `--no-wait=false` or `--include-metadata=true` (a boolean with
 * a value is an error there) nor a value after a flag that starts with a dash, and its messages
 * speak of "options"; checking the tokens keeps parseArgs' tokenizer and gives kubectl's rules and
 * our messages (`unknown flag --x`, `--x needs a value`, `--x: "y" is not true or false`).
 */
import { parseArgs } from 'node:util';

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export interface FlagSpec {
  /** String flags and their defaults (undefined: none). */
  readonly strings: Readonly<Record<string, string | undefined>>;
  /** Boolean flags and their defaults. */
  readonly booleans?: Readonly<Record<string, boolean>>;
  /** One-letter aliases: letter → long name. */
  readonly short?: Readonly<Record<string, string>>;
  /** Arguments that are not flags are collected; without this they are an error. */
  readonly positionals?: boolean;
}

export interface Flags {
  /** Every flag of the spec, given or default. */
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  str(name: string): string | undefined;
  bool(name: string): boolean;
  /** A comma-separated string flag as its non-empty, trimmed items. */
  list(name: string): string[];
  /** A string flag as a non-negative integer (UsageError otherwise). */
  int(name: string): number;
  /** Whether the flag was on the command line. */
  has(name: string): boolean;
}

const TRUE = new Set(['true', '1', 't', 'TRUE', 'True']);
const FALSE = new Set(['false', '0', 'f', 'FALSE', 'False']);

type Options = Record<string, { type: 'string' | 'boolean'; short?: string }>;

export function parseFlags(argv: readonly string[], spec: FlagSpec): Flags {
  const booleans = spec.booleans ?? {};
  const options: Options = {};
  for (const name of Object.keys(spec.strings)) options[name] = { type: 'string' };
  for (const name of Object.keys(booleans)) options[name] = { type: 'boolean' };
  for (const [letter, name] of Object.entries(spec.short ?? {})) {
    const o = options[name];
    if (o === undefined) throw new Error(`flag spec: -${letter} names no flag (--${name})`);
    o.short = letter;
  }
  const values: Record<string, string | boolean | undefined> = { ...spec.strings, ...booleans };
  const given = new Set<string>();
  const positionals: string[] = [];
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind === 'option-terminator') continue;
    if (t.kind === 'positional') {
      if (!spec.positionals) throw new UsageError(`unexpected argument ${JSON.stringify(t.value)}`);
      positionals.push(t.value);
      continue;
    }
    const type = Object.hasOwn(options, t.name) ? options[t.name]?.type : undefined;
    if (type === 'boolean') {
      if (t.value === undefined || TRUE.has(t.value)) values[t.name] = true;
      else if (FALSE.has(t.value)) values[t.name] = false;
      else throw new UsageError(`--${t.name}: ${JSON.stringify(t.value)} is not true or false`);
    } else if (type === 'string') {
      if (t.value === undefined) throw new UsageError(`--${t.name} needs a value`);
      values[t.name] = t.value;
    } else throw new UsageError(`unknown flag ${t.rawName}`);
    given.add(t.name);
  }
  const str = (n: string): string | undefined => {
    const v = values[n];
    return typeof v === 'string' ? v : undefined;
  };
  return {
    values,
    positionals,
    str,
    bool: (n) => values[n] === true,
    list: (n) => (str(n) ?? '').split(',').map((x) => x.trim()).filter(Boolean),
    int(n) {
      const v = str(n) ?? '';
      if (!/^\d+$/.test(v)) throw new UsageError(`--${n}: ${JSON.stringify(v)} is not a non-negative integer`);
      return Number(v);
    },
    has: (n) => given.has(n),
  };
}
