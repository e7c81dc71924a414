/** A MetricsConfiguration spec for tests, written as a user would: validated, throwing on the first error. */
import { validateMetricsSpec, type MetricsSpec } from '../../src/metrics/index.js';

export function specOf(raw: unknown): MetricsSpec {
  const r = validateMetricsSpec(raw);
  const first = r.errors[0];
  if (first || !r.spec) throw new Error(`${first?.field ?? 'spec'}: ${first?.problem ?? 'is not valid'}`);
  return r.spec;
}
