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

/** One port of `vfpctrl /list-vmswitch-port /format 1`'s `Ports`. */
export interface VfpSwitchPort {
  /** The port's GUID (`Name`): what an HNS endpoint's "Endpoint Port" allocator names. */
  readonly name: string;
  /** Its friendly name (`Id`): an endpoint's GUID, `ExternalPort`, `Container NIC <8 hex>`, ... */
  readonly id: string | undefined;
  readonly vmsPortId: number | undefined;
  readonly mac: string | undefined;
}

export interface VfpSwitchPorts {
  readonly ports: readonly VfpSwitchPort[];
  /** Ports that could not be read, with the field and why; the other ports are kept. */
  readonly issues: readonly string[];
}

/**
 * `vfpctrl /list-vmswitch-port /format 1`: a JSON object whose `Ports` array lists the vSwitch's VFP
 * ports (`Name`, `Id`, `VmsPortId`, `MacAddress`; other fields ignored). Throws when the text is not
 * such an object; a port without a string `Name` is an issue naming its index, the rest are kept.
 */
export function parseVfpSwitchPorts(text: string): VfpSwitchPorts {
  let doc: unknown;
  try {
    doc = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    throw new Error(`vfpctrl /list-vmswitch-port: not JSON (${(e as Error).message}): ${JSON.stringify(text.trim().slice(0, 120))}`, { cause: e });
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new Error('vfpctrl /list-vmswitch-port: expected a JSON object');
  const list = (doc as Record<string, unknown>)['Ports'];
  if (list === undefined || list === null) return { ports: [], issues: [] };
  if (!Array.isArray(list)) throw new Error('vfpctrl /list-vmswitch-port: Ports is not an array');
  const ports: VfpSwitchPort[] = [];
  const issues: string[] = [];
  list.forEach((p: unknown, i) => {
    if (typeof p !== 'object' || p === null || Array.isArray(p)) {
      issues.push(`Ports[${i}]: not an object`);
      return;
    }
    const r = p as Record<string, unknown>;
    if (typeof r['Name'] !== 'string' || r['Name'] === '') {
      issues.push(`Ports[${i}]: Name is not a port GUID (${JSON.stringify(r['Name']) ?? 'missing'})`);
      return;
    }
    ports.push({
      name: r['Name'], id: typeof r['Id'] === 'string' ? r['Id'] : undefined,
      vmsPortId: typeof r['VmsPortId'] === 'number' ? r['VmsPortId'] : undefined, mac: typeof r['MacAddress'] === 'string' ? r['MacAddress'] : undefined,
    });
  });
  return { ports, issues };
}
