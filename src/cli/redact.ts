/**
 * Redaction for `retina-agent diagnose`, whose output goes into support tickets: the value of any
 * key that sounds like a credential (token, password, secret, private or API key, client key or
 * certificate data, ...) is replaced by REDACTED, at any depth. Key names stay, so the reader sees
 * that something was set.
 */
export const REDACTED = '[REDACTED]';

/** Key names whose values are never shown (case-insensitive; camelCase, snake_case, dots and dashes alike). */
const SECRET_KEY = /(token|passw(or)?d|passphrase|secret|credential|private|api.?key|access.?key|client.?key|(^|[._-])key$|[a-z]Key$|key.?data$|certificate.?data$|cert.?data$|bearer|authorization|cookie|sas$|connection.?string|(^|\.)headers$)/i;

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** A deep copy of `value` with the values of secret-ish keys replaced by REDACTED. */
export function redact(value: unknown, key = ''): unknown {
  if (key && isSecretKey(key) && value !== undefined && value !== null && value !== '') return REDACTED;
  if (Array.isArray(value)) return value.map((v) => redact(v));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redact(v, k)]));
  }
  return value;
}
