/**
 * The HCN and HNS JSON documents hnsstats reads, parsed into small typed records. u64 counters keep
 * every digit (BigInt): JSON.parse would round anything above 2^53. Each problem names the field.
 */

/** JSON.parse, but integers beyond 2^53 come back as BigInt (the reviver sees their source text). */
export function parseJsonU64(text: string, what: string): unknown {
  try {
    return JSON.parse(text, (_key, value: unknown, context?: { source?: string }) =>
      typeof value === 'number' && !Number.isSafeInteger(value) && context?.source && /^\d+$/.test(context.source) ? BigInt(context.source) : value);
  } catch (e) {
    throw new Error(`${what}: not JSON (${(e as Error).message})`);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** JSON text of a parsed value for an error message: big integers (bigint here) as their digits. */
const show = (v: unknown): string => JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x)) ?? String(v);

/** HcnEnumerateEndpoints' output: a JSON array of GUID strings (null or '' when there are none). */
export function parseEndpointIds(text: string): string[] {
  if (text.trim() === '' || text.trim() === 'null') return [];
  const doc = parseJsonU64(text, 'HcnEnumerateEndpoints');
  if (!Array.isArray(doc) || doc.some((x) => typeof x !== 'string')) throw new Error('HcnEnumerateEndpoints: expected a JSON array of endpoint IDs');
  return doc as string[];
}

export interface HcnEndpoint {
  readonly id: string;
  /**
   * IpConfigurations[0].IpAddress (as Retina) or, in an HNS v1-shaped document (endpoints created
   * through the v1 API: `IPAddress` and `PrefixLength`, no IpConfigurations), IPAddress; undefined
   * when the endpoint has none.
   */
  readonly ip: string | undefined;
  readonly mac: string;
}

/** A HostComputeEndpoint document (HcnQueryEndpointProperties), v2-shaped or HNS v1-shaped. */
export function parseEndpoint(text: string, id: string): HcnEndpoint {
  const doc = parseJsonU64(text, `endpoint ${id}`);
  if (!isObject(doc)) throw new Error(`endpoint ${id}: expected a JSON object`);
  const ipc = doc['IpConfigurations'];
  let ip: string | undefined;
  if (ipc !== undefined && ipc !== null) {
    if (!Array.isArray(ipc)) throw new Error(`endpoint ${id}: IpConfigurations is not an array`);
    const first: unknown = ipc[0];
    if (first !== undefined) {
      if (!isObject(first) || typeof first['IpAddress'] !== 'string') throw new Error(`endpoint ${id}: IpConfigurations[0].IpAddress is not a string`);
      ip = first['IpAddress'];
    }
  }
  const v1 = doc['IPAddress'];
  if (ip === undefined && v1 !== undefined && v1 !== null) {
    if (typeof v1 !== 'string') throw new Error(`endpoint ${id}: IPAddress is not a string (${show(v1)})`);
    if (v1 !== '') ip = v1;
  }
  const mac = doc['MacAddress'];
  return { id: typeof doc['ID'] === 'string' ? doc['ID'] : id, ip, mac: typeof mac === 'string' ? mac : '' };
}

/** The counters of `GET /endpointstats/<id>`, exact. */
export interface EndpointStats {
  readonly packetsReceived: bigint;
  readonly packetsSent: bigint;
  readonly bytesReceived: bigint;
  readonly bytesSent: bigint;
  readonly droppedIncoming: bigint;
  readonly droppedOutgoing: bigint;
}

const STAT_FIELDS: readonly [keyof EndpointStats, string][] = [
  ['packetsReceived', 'PacketsReceived'], ['packetsSent', 'PacketsSent'], ['bytesReceived', 'BytesReceived'], ['bytesSent', 'BytesSent'],
  ['droppedIncoming', 'DroppedPacketsIncoming'], ['droppedOutgoing', 'DroppedPacketsOutgoing'],
];

/** The `Output` of an HNS v1 response; `{Success:false, Error}` throws with HNS's error text. */
export function hnsOutput(text: string, what: string): unknown {
  const doc = parseJsonU64(text, what);
  if (!isObject(doc)) throw new Error(`${what}: expected a JSON object`);
  if (doc['Success'] !== true) throw new Error(`${what}: hns failed with error: ${typeof doc['Error'] === 'string' ? doc['Error'] : show(doc['Error'] ?? 'Success is not true')}`);
  return doc['Output'];
}

export function parseEndpointStats(text: string, id: string): EndpointStats {
  const what = `GET /endpointstats/${id}`;
  const out = hnsOutput(text, what);
  if (!isObject(out)) throw new Error(`${what}: Output is not an object`);
  const stats: Record<string, bigint> = {};
  for (const [key, field] of STAT_FIELDS) {
    const v = out[field];
    if (v === undefined || v === null) stats[key] = 0n;
    else if (typeof v === 'bigint') stats[key] = v;
    else if (typeof v === 'number' && Number.isInteger(v) && v >= 0) stats[key] = BigInt(v);
    else throw new Error(`${what}: ${field} is not an unsigned integer (${show(v)})`);
  }
  return stats as unknown as EndpointStats;
}

/** `GET /endpoints/` (v1): endpoint ID (upper case) → VFP port GUID of its "Endpoint Port" allocator. */
export function parsePortMap(text: string): Map<string, string> {
  const out = hnsOutput(text, 'GET /endpoints/');
  const map = new Map<string, string>();
  if (out === null || out === undefined) return map;
  if (!Array.isArray(out)) throw new Error('GET /endpoints/: Output is not an array');
  for (const ep of out) {
    if (!isObject(ep) || typeof ep['ID'] !== 'string') continue;
    const allocators = isObject(ep['Resources']) ? ep['Resources']['Allocators'] : undefined;
    if (!Array.isArray(allocators)) continue;
    const port = allocators.find((a): a is Record<string, unknown> => isObject(a) && a['Tag'] === 'Endpoint Port' && typeof a['EndpointPortGuid'] === 'string');
    if (port) map.set(ep['ID'].toUpperCase(), port['EndpointPortGuid'] as string);
  }
  return map;
}

/** `GET /endpoints/` (v1): the IDs (upper case) of remote endpoints (`IsRemoteEndpoint: true`), which have no VFP port on this node. */
export function parseRemoteEndpoints(text: string): Set<string> {
  const out = hnsOutput(text, 'GET /endpoints/');
  const set = new Set<string>();
  if (out === null || out === undefined) return set;
  if (!Array.isArray(out)) throw new Error('GET /endpoints/: Output is not an array');
  for (const ep of out) if (isObject(ep) && typeof ep['ID'] === 'string' && ep['IsRemoteEndpoint'] === true) set.add(ep['ID'].toUpperCase());
  return set;
}
