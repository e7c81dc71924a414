/** Where a configuration value came from; part of every error message. */
export type ConfigSource = 'default' | 'file' | 'env';

/** One bad configuration value: names the key, the value, and what is allowed. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly key: string,
    readonly value: unknown,
    readonly allowed: string,
    readonly source: ConfigSource | string = 'file',
  ) {
    super(`key "${key}": invalid value ${render(value)} (from ${source}); allowed: ${allowed}`);
  }
}

/** Every problem found in one load, so the user fixes them all in one go. */
export class ConfigErrors extends Error {
  override readonly name = 'ConfigErrors';
  constructor(readonly errors: readonly ConfigError[]) {
    super(errors.map((e) => e.message).join('; '));
  }
}

/** Thrown by a value parser; the loader turns it into a ConfigError with key, value and source. */
export class InvalidValue extends Error {
  override readonly name = 'InvalidValue';
  constructor(readonly allowed?: string) {
    super(allowed ?? 'invalid value');
  }
}

function render(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
}
