/**
 * Layers defaults, then the YAML file, then `RETINA_<KEY>` environment variables, validates every
 * declared key, and returns frozen values. The only module that reads the environment (it is passed
 * in, so tests and the CLI decide what it is).
 */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { ConfigError, ConfigErrors, InvalidValue, type ConfigSource } from './errors.js';
import { envName, type ConfigSpec, type KeySpec } from './schema.js';
import { closestMatch } from './suggest.js';

export interface LoadedValues {
  /** Parsed value of a declared key. */
  get<T>(spec: KeySpec<T>): T;
  sourceOf(key: string): ConfigSource;
  /** Keys in the file, and `RETINA_*` variables, that no component declares (a warning, not an error). */
  readonly unknownKeys: readonly UnknownKey[];
}

export interface UnknownKey {
  /** As written: the file's dotted key, or the variable's name. */
  readonly key: string;
  readonly source: 'file' | 'env';
  /** The declared key closest to it (case-insensitive edit distance), when one is close. */
  readonly didYouMean: string | undefined;
  /** What it was set to (for `retina-agent diagnose`, which redacts secret-ish keys). */
  readonly value: unknown;
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
  for (const spec of opts.specs) {
    const lk = spec.key.toLowerCase();
    let raw: unknown;
    let source: ConfigSource = 'default';
    const fromFile = fileFlat.get(lk);
    // A key written without a value (`key:`, YAML null) is unset, as Retina (viper) reads it: Retina's
    // Hubble chart renders `enableConntrackMetrics:` when its values leave the key out.
    if (fromFile !== undefined && fromFile.value !== null) {
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
  const unknownKeys = unknownKeysOf(fileFlat, opts.env, opts.specs.map((s) => s.key));
  return {
    get<T>(spec: KeySpec<T>): T {
      if (!values.has(spec as KeySpec<unknown>)) throw new Error(`configuration key "${spec.key}" was not declared when loading`);
      return values.get(spec as KeySpec<unknown>) as T;
    },
    sourceOf: (key) => sources.get(key.toLowerCase()) ?? 'default',
    unknownKeys,
  };
}

const ENV_PREFIX = 'RETINA_';

/** File keys and `RETINA_*` variables nobody declares, each with the closest declared key. */
function unknownKeysOf(fileFlat: ReadonlyMap<string, { key: string; value: unknown }>, env: LoadOptions['env'], declared: readonly string[]): UnknownKey[] {
  const known = new Set(declared.map((k) => k.toLowerCase()));
  // Compared without the RETINA_ prefix, so a typo is measured against the key's part only.
  const envNames = new Map(declared.map((k) => [envName(k).slice(ENV_PREFIX.length), k]));
  const out: UnknownKey[] = [];
  for (const { key, value } of fileFlat.values()) {
    if (!known.has(key.toLowerCase())) out.push({ key, source: 'file', didYouMean: closestMatch(key, declared), value });
  }
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith(ENV_PREFIX) || envNames.has(name.slice(ENV_PREFIX.length))) continue;
    const near = closestMatch(name.slice(ENV_PREFIX.length), envNames.keys());
    out.push({ key: name, source: 'env', didYouMean: near === undefined ? undefined : envNames.get(near), value: env[name] });
  }
  return out;
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
