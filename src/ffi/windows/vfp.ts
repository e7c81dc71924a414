/**
 * `vfpctrl /port <id> /get-port-counter` text: `Name : integer` lines, the OUT direction first, then
 * everything after `Direction - IN`. Banners, separators, blank and unknown lines are skipped; a
 * known counter whose value is not a plain integer (a localized `1,234` or `1.234`) is reported as
 * an issue naming the line and left out, and the rest of the port's counters are kept (Retina fails
 * the whole parse).
 */

/** The counters we use, by name with spaces removed (Retina's matching), to our field. */
const COUNTERS = {
  SYNpackets: 'syn', 'SYN-ACKpackets': 'synAck', FINpackets: 'fin', RSTpackets: 'rst',
  TCPConnectionsVerified: 'verified', TCPConnectionsTimedOut: 'timedOut', TCPConnectionsReset: 'reset',
  TCPConnectionsResetbySYN: 'resetBySyn', TCPConnectionsClosedbyFIN: 'closedByFin', TCPHalfOpenTimeouts: 'halfOpenTimeouts',
  TCPConnectionsExpiredtoTimeWait: 'timeWaitExpired', DroppedACLpackets: 'aclDrops',
} as const;

export type VfpField = (typeof COUNTERS)[keyof typeof COUNTERS];
export type VfpDirection = Partial<Record<VfpField, bigint>>;

export interface VfpCounters {
  readonly out: VfpDirection;
  readonly in: VfpDirection;
  /** Lines of known counters that could not be read, with why. */
  readonly issues: readonly string[];
}

export function parseVfpCounters(text: string): VfpCounters {
  const result = { out: {} as VfpDirection, in: {} as VfpDirection };
  const issues: string[] = [];
  let dir: VfpDirection = result.out;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (/^direction\s*-\s*in\b/i.test(line)) {
      dir = result.in;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const key = line.slice(0, colon).replace(/\s+/g, '');
    // Own keys only: `constructor : 5` must not find Object.prototype's.
    const field = Object.hasOwn(COUNTERS, key) ? (COUNTERS as Record<string, VfpField>)[key] : undefined;
    if (!field) continue;
    const value = line.slice(colon + 1).trim();
    if (!/^\d+$/.test(value)) {
      issues.push(`line ${i + 1}: ${line.slice(0, colon).trim()} = ${JSON.stringify(value)} is not a plain integer${/^\d{1,3}([,.\u00a0\u202f ]\d{3})+$/.test(value) ? ' (a localized number?)' : ''}`);
      continue;
    }
    dir[field] = BigInt(value);
  }
  return { ...result, issues };
}
