/**
 * One reading of everything linuxutil reports, its publication (each family's series replaced in
 * one synchronous step, so states and interfaces that went away disappear) and the status it
 * implies.
 */
import { catalog, replaceSeries, type MetricWriters } from '../../../metrics/index.js';
import { PartialReadError } from '../../../plugin/index.js';
import type { ProtocolRows, Row } from './curated.js';
import type { InterfaceReader } from './interfaces.js';
import { ParseCache, readProc, type ReadFailure } from './proc.js';

export interface Reading extends ProtocolRows {
  readonly interfaceStats: readonly Row[];
  readonly failures: readonly ReadFailure[];
  readonly issues: readonly string[];
}

/** Reads /proc/net and the interfaces at once. Never throws: failures are part of the reading. */
export async function readAll(interfaces: InterfaceReader, procRoot = '/proc', cache = new ParseCache()): Promise<Reading> {
  const [proc, ifs] = await Promise.all([readProc(procRoot, cache), interfaces.read()]);
  return { ...proc.rows, interfaceStats: ifs.rows, failures: [...proc.failures, ...ifs.failures], issues: proc.issues };
}

/** The six families linuxutil writes. */
export const EMITS = [
  catalog.tcpState, catalog.tcpConnectionRemote, catalog.tcpConnectionStats, catalog.ipConnectionStats, catalog.udpConnectionStats,
  catalog.interfaceStats,
] as const;

export function publish(metrics: MetricWriters, r: Reading): void {
  replaceSeries(metrics.gauge(catalog.tcpState), r.tcpState);
  replaceSeries(metrics.gauge(catalog.tcpConnectionRemote), r.tcpConnectionRemote);
  replaceSeries(metrics.gauge(catalog.tcpConnectionStats), r.tcpConnectionStats);
  replaceSeries(metrics.gauge(catalog.ipConnectionStats), r.ipConnectionStats);
  replaceSeries(metrics.gauge(catalog.udpConnectionStats), r.udpConnectionStats);
  replaceSeries(metrics.gauge(catalog.interfaceStats), r.interfaceStats);
}

/**
 * Why the reading is incomplete, or undefined when it is whole. The text depends only on what
 * failed (no counts that change every tick), so the manager logs a change once.
 */
export function degradedReason(r: Reading, ethtoolUnavailable?: string): string | undefined {
  const parts: string[] = [];
  if (r.failures.length) parts.push(new PartialReadError(r.failures).message);
  if (r.issues.length) parts.push(`unparsed input: ${r.issues.join('; ')}`);
  if (ethtoolUnavailable !== undefined) parts.push(`ethtool stats unavailable: ${ethtoolUnavailable}`);
  return parts.length ? parts.join('; ') : undefined;
}
