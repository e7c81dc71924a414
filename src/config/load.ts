/**
 * Layers defaults, then the YAML file, then `RETINA_<KEY>` environment variables, validates every
 * declared key, and returns frozen values. The only module that reads the environment (it is passed
 * in, so tests and the CLI decide what it is).
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { ConfigError, ConfigErrors, InvalidValue, type ConfigSource } from './errors.js';
import { envName, type ConfigSpec, type KeySpec } from './schema.js';

export interface LoadedValues {
  /** Parsed value of a declared key. */
  get<T>(spec: KeySpec<T>): T;
  sourceOf(key: string): ConfigSource;
  /** Keys present in the file that no component declares (logged as a warning, not an error). */
  readonly unknownKeys: readonly string[];
}

export interface LoadOptions {
  /** YAML text of the config file, or undefined when there is no file. */
  fileText?: string | undefined;
  filePath?: string | undefined;
  env: Readonly<Record<string, string | undefined>>;
  specs: readonly KeySpec<unknown>[];
}

/** Merges key lists from several components; a key declared twice is a programming error. */
export function collectSpecs(...groups: readonly ConfigSpec<object>[]): KeySpec<unknown>[] {
  const seen = new Map<string, KeySpec<unknown>>();
  for (const g of groups) {
    for (const s of Object.values(g) as KeySpec<unknown>[]) {
      const k = s.key.toLowerCase();
      const prev = seen.get(k);
      if (prev && prev !== s) throw new Error(`configuration key "${s.key}" is declared twice`);
      seen.set(k, s);
    }
  }
  return [...seen.values()];
}

export function loadValues(opts: LoadOptions): LoadedValues {
  const fileFlat = new Map<string, { key: string; value: unknown }>();
  if (opts.fileText !== undefined) {
    let doc: unknown;
    try {
      doc = parseYaml(opts.fileText);
    } catch (e) {
      throw new ConfigErrors([new ConfigError('(file)', opts.filePath ?? '', `valid YAML (${(e as Error).message.split('\n')[0]})`, 'file')]);
    }
    if (doc !== null && doc !== undefined) {
      if (typeof doc !== 'object' || Array.isArray(doc)) {
        throw new ConfigErrors([new ConfigError('(file)', opts.filePath ?? '', 'a YAML mapping of keys to values', 'file')]);
      }
      flatten(doc as Record<string, unknown>, '', fileFlat);
    }
  }
  const values = new Map<KeySpec<unknown>, unknown>();
  const sources = new Map<string, ConfigSource>();
  const errors: ConfigError[] = [];
  const known = new Set<string>();
  for (const spec of opts.specs) {
    const lk = spec.key.toLowerCase();
    known.add(lk);
    let raw: unknown;
    let source: ConfigSource = 'default';
    const fromFile = fileFlat.get(lk);
    if (fromFile !== undefined) {
      raw = fromFile.value;
      source = 'file';
    }
    const ev = opts.env[envName(spec.key)];
    if (ev !== undefined && ev !== '') {
      raw = ev;
      source = 'env';
    }
    sources.set(lk, source);
    if (source === 'default') {
      values.set(spec, spec.default);
      continue;
    }
    try {
      values.set(spec, spec.parse(raw));
    } catch (e) {
      if (!(e instanceof InvalidValue)) throw e;
      const label = source === 'env' ? `env ${envName(spec.key)}` : 'file';
      errors.push(new ConfigError(spec.key, raw, e.allowed ?? spec.allowed, label));
    }
  }
  if (errors.length) throw new ConfigErrors(errors);
  // A parent of a declared key (e.g. `apiServer` for `apiServer.port`) is not unknown.
  const unknownKeys = [...fileFlat.values()].map((v) => v.key).filter((k) => !known.has(k.toLowerCase()));
  return {
    get<T>(spec: KeySpec<T>): T {
      if (!values.has(spec as KeySpec<unknown>)) throw new Error(`configuration key "${spec.key}" was not declared when loading`);
      return values.get(spec as KeySpec<unknown>) as T;
    },
    sourceOf: (key) => sources.get(key.toLowerCase()) ?? 'default',
    unknownKeys,
  };
}

/** Builds a component's frozen config object from loaded values. */
export function pick<C>(spec: ConfigSpec<C>, values: LoadedValues): Readonly<C> {
  const out = {} as Record<string, unknown>;
  for (const [field, ks] of Object.entries(spec) as [string, KeySpec<unknown>][]) out[field] = values.get(ks);
  return Object.freeze(out) as Readonly<C>;
}

function flatten(obj: Record<string, unknown>, prefix: string, out: Map<string, { key: string; value: unknown }>): void {
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) flatten(v as Record<string, unknown>, key, out);
    else out.set(key.toLowerCase(), { key, value: v });
  }
}

export async function readConfigFile(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    throw new ConfigErrors([new ConfigError('--config', path, `a readable file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, 'command line')]);
  }
}
