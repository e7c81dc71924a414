/** Minimal flag parsing shared by the commands: `--name value`, `--name=value`, and booleans. */
import { parseArgs } from 'node:util';

export interface ParsedArgs {
  readonly values: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
}

export class UsageError extends Error {
  override readonly name = 'UsageError';
}

export function parseFlags(argv: readonly string[], strings: readonly string[], booleans: readonly string[] = []): ParsedArgs {
  const options: Record<string, { type: 'string' | 'boolean' }> = {};
  for (const s of strings) options[s] = { type: 'string' };
  for (const b of [...booleans, 'help', 'version']) options[b] = { type: 'boolean' };
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
    return { values: values as Record<string, string | boolean | undefined>, positionals };
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}
