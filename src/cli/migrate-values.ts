/**
 * `kubectl retina migrate-values -f retina-values.yaml[,override.yaml]`: Microsoft Retina's Helm values
 * (its standard chart's and its Hubble chart's) to this chart's, on stdout (or -o FILE); each key that
 * cannot be mapped is named, with the reason, as a comment at the top of the output and on stderr.
 * Several files (comma-separated, as helm's -f order) are merged first, later ones winning.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { convertRetinaValues, type Values } from '../chart/index.js';
import { loadPlugins } from '../platform/index.js';
import { UsageError, parseFlags } from './args.js';

export const MIGRATE_USAGE = `usage: kubectl-retina migrate-values -f RETINA_VALUES[,MORE] [-o OUT]
  Prints retina-ts chart values for Microsoft Retina's Helm values (standard or Hubble chart),
  naming every key it cannot map and why.`;

const isMap = (v: unknown): v is Values => v !== null && typeof v === 'object' && !Array.isArray(v);

/** Helm's merge of values files: maps merge key by key, anything else is replaced. */
export function mergeValues(base: Values, over: Values): Values {
  const out: Values = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = isMap(v) && isMap(out[k]) ? mergeValues(out[k], v) : v;
  return out;
}

export async function migrateValuesText(texts: readonly string[]): Promise<{ yaml: string; unmapped: readonly { key: string; why: string }[] }> {
  let merged: Values = {};
  for (const t of texts) {
    const v = (parse(t) ?? {}) as unknown;
    if (!isMap(v)) throw new UsageError('a values file must hold a YAML map');
    merged = mergeValues(merged, v);
  }
  const names = async (os: 'linux' | 'windows'): Promise<string[]> => (await loadPlugins(os)).map((p) => p.name);
  const { values, unmapped } = convertRetinaValues(merged, { plugins: { linux: await names('linux'), windows: await names('windows') } });
  const head = ['# retina-ts chart values converted from Microsoft Retina\'s by `kubectl retina migrate-values`.'];
  if (unmapped.length) {
    head.push(`# Not mapped (${unmapped.length}):`);
    for (const u of unmapped) head.push(`#   ${u.key}: ${u.why}`);
  }
  const body = Object.keys(values).length ? stringify(values, { lineWidth: 0, aliasDuplicateObjects: false }) : '{}\n';
  return { yaml: `${head.join('\n')}\n${body}`, unmapped };
}

export async function runMigrateValues(argv: readonly string[]): Promise<number> {
  try {
    const f = parseFlags(argv, { strings: { values: undefined, output: undefined }, booleans: { help: false }, short: { f: 'values', o: 'output', h: 'help' } });
    if (f.bool('help')) {
      process.stdout.write(MIGRATE_USAGE + '\n');
      return 0;
    }
    const files = f.list('values');
    if (files.length === 0) throw new UsageError('-f/--values is required');
    const { yaml, unmapped } = await migrateValuesText(files.map((p) => readFileSync(p, 'utf8')));
    const out = f.str('output');
    if (out) writeFileSync(out, yaml);
    else process.stdout.write(yaml);
    for (const u of unmapped) process.stderr.write(`not mapped: ${u.key}: ${u.why}\n`);
    return 0;
  } catch (e) {
    const err = e as Error;
    process.stderr.write(`kubectl-retina migrate-values: ${err.message}\n${err instanceof UsageError ? MIGRATE_USAGE + '\n' : ''}`);
    return err instanceof UsageError ? 2 : 1;
  }
}
