/**
 * Hubble's FlowFilter semantics (cilium/cilium pkg/hubble/filters) over Hubble `flow.Flow` objects
 * in the shape @grpc/proto-loader gives with `keepCase, enums: String, longs: Number, defaults:
 * false, oneofs: true`: snake_case keys as in flow.proto (so `IP.ipVersion`, `l4.TCP`), enums as
 * their names (numbers are accepted too), absent fields simply missing.
 *
 * - A flow passes when it matches ANY whitelist filter (or the whitelist is empty) and NO blacklist
 *   filter. Within one FlowFilter every set field must match (AND); within a repeated field any value
 *   matches (OR). An empty repeated field is the same as an absent one (proto3 cannot tell them apart).
 * - Each field reads the flow as Hubble's getters do: a missing message reads as its defaults, so
 *   `verdict: [VERDICT_UNKNOWN]` matches a flow without a verdict, while a filter on data the flow
 *   lacks (no IP, no pod, no DNS record, no HTTP record, no trace context) does not match it.
 * - Fields this agent's flows never carry but Hubble evaluates by plain comparison (http_*,
 *   source/destination_identity, trace_id, cluster names) are implemented the same way, so they match
 *   nothing here, exactly as Hubble answers for flows without that data. Fields whose meaning needs
 *   data or machinery we do not have (CEL expressions, node labels, interfaces, translated source
 *   IPs, encryption, IP-option trace IDs) and any field unknown to FlowFilter are REJECTED with a
 *   FilterError rather than silently ignored: ignoring a whitelist field would widen the answer and
 *   ignoring a blacklist field would narrow it, both without telling the client.
 *
 * Everything is compiled once per request (regexes through re2js, RE2's linear-time engine with Go's
 * syntax, so a client's pattern behaves as in Hubble and cannot backtrack the event loop away; CIDRs
 * parsed; enum names resolved). Matching reads the flow's fields and allocates nothing for the
 * common fields (IPs, pods, labels, verdicts, ports, protocol); regex fields run re2js only on flows
 * that carry the text.
 */
import { RE2JS } from 're2js';
import { cidrsContain, isIP, parseCidr, type Cidr } from './filter-ip.js';
import { compileSelector, SelectorError, type LabelSelector } from './filter-selector.js';

/** A bad filter: the message names the field, e.g. `whitelist[0].source_ip[1]: "x" is not an IP or CIDR`. */
export class FilterError extends Error {
  override readonly name = 'FilterError';
  constructor(
    /** Path of the offending field, e.g. `whitelist[0].source_ip[1]`. */
    readonly field: string,
    problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** A Hubble flow as a decoded/encodable plain object (snake_case keys). */
export type HubbleFlow = Readonly<Record<string, unknown>>;

export interface FlowMatcher {
  /** True when the flow passes: it matches any whitelist filter (or there is none) and no blacklist filter. */
  match(flow: HubbleFlow): boolean;
}

type Rec = Readonly<Record<string, unknown>>;
type Pred = (flow: Rec) => boolean;

// --- reading the flow (never throws, whatever the object holds) -----------------------------------

const rec = (v: unknown): Rec | undefined => (typeof v === 'object' && v !== null ? (v as Rec) : undefined);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);
const list = (v: unknown): readonly unknown[] | undefined => (Array.isArray(v) ? v : undefined);

// --- enums (wire facts from flow.proto) ------------------------------------------------------------

const VERDICT = new Map<string, number>([
  ['VERDICT_UNKNOWN', 0], ['FORWARDED', 1], ['DROPPED', 2], ['ERROR', 3], ['AUDIT', 4], ['REDIRECTED', 5], ['TRACED', 6], ['TRANSLATED', 7],
]);
const TRAFFIC_DIRECTION = new Map<string, number>([['TRAFFIC_DIRECTION_UNKNOWN', 0], ['INGRESS', 1], ['EGRESS', 2]]);
const IP_VERSION = new Map<string, number>([['IP_NOT_USED', 0], ['IPv4', 1], ['IPv6', 2]]);
/** DropReason names this build knows; other upper-case names are compared by name. */
const DROP_REASON = new Map<string, number>(
  (
    'DROP_REASON_UNKNOWN=0 INVALID_SOURCE_MAC=130 INVALID_DESTINATION_MAC=131 INVALID_SOURCE_IP=132 POLICY_DENIED=133 ' +
    'INVALID_PACKET_DROPPED=134 CT_TRUNCATED_OR_INVALID_HEADER=135 CT_MISSING_TCP_ACK_FLAG=136 CT_UNKNOWN_L4_PROTOCOL=137 ' +
    'CT_CANNOT_CREATE_ENTRY_FROM_PACKET=138 UNSUPPORTED_L3_PROTOCOL=139 MISSED_TAIL_CALL=140 ERROR_WRITING_TO_PACKET=141 ' +
    'UNKNOWN_L4_PROTOCOL=142 UNKNOWN_ICMPV4_CODE=143 UNKNOWN_ICMPV4_TYPE=144 UNKNOWN_ICMPV6_CODE=145 UNKNOWN_ICMPV6_TYPE=146 ' +
    'ERROR_RETRIEVING_TUNNEL_KEY=147 ERROR_RETRIEVING_TUNNEL_OPTIONS=148 INVALID_GENEVE_OPTION=149 UNKNOWN_L3_TARGET_ADDRESS=150 ' +
    'STALE_OR_UNROUTABLE_IP=151 NO_MATCHING_LOCAL_CONTAINER_FOUND=152 ERROR_WHILE_CORRECTING_L3_CHECKSUM=153 ' +
    'ERROR_WHILE_CORRECTING_L4_CHECKSUM=154 CT_MAP_INSERTION_FAILED=155 INVALID_IPV6_EXTENSION_HEADER=156 ' +
    'IP_FRAGMENTATION_NOT_SUPPORTED=157 SERVICE_BACKEND_NOT_FOUND=158 NO_TUNNEL_OR_ENCAPSULATION_ENDPOINT=160 ' +
    'FAILED_TO_INSERT_INTO_PROXYMAP=161 REACHED_EDT_RATE_LIMITING_DROP_HORIZON=162 UNKNOWN_CONNECTION_TRACKING_STATE=163 ' +
    'LOCAL_HOST_IS_UNREACHABLE=164 NO_CONFIGURATION_AVAILABLE_TO_PERFORM_POLICY_DECISION=165 UNSUPPORTED_L2_PROTOCOL=166 ' +
    'NO_MAPPING_FOR_NAT_MASQUERADE=167 UNSUPPORTED_PROTOCOL_FOR_NAT_MASQUERADE=168 FIB_LOOKUP_FAILED=169 ' +
    'ENCAPSULATION_TRAFFIC_IS_PROHIBITED=170 INVALID_IDENTITY=171 UNKNOWN_SENDER=172 NAT_NOT_NEEDED=173 IS_A_CLUSTERIP=174 ' +
    'FIRST_LOGICAL_DATAGRAM_FRAGMENT_NOT_FOUND=175 FORBIDDEN_ICMPV6_MESSAGE=176 DENIED_BY_LB_SRC_RANGE_CHECK=177 ' +
    'SOCKET_LOOKUP_FAILED=178 SOCKET_ASSIGN_FAILED=179 PROXY_REDIRECTION_NOT_SUPPORTED_FOR_PROTOCOL=180 POLICY_DENY=181 ' +
    'VLAN_FILTERED=182 INVALID_VNI=183 INVALID_TC_BUFFER=184 NO_SID=185 MISSING_SRV6_STATE=186 NAT46=187 NAT64=188 ' +
    'AUTH_REQUIRED=189 CT_NO_MAP_FOUND=190 SNAT_NO_MAP_FOUND=191 INVALID_CLUSTER_ID=192 UNSUPPORTED_PROTOCOL_FOR_DSR_ENCAP=193 ' +
    'NO_EGRESS_GATEWAY=194 UNENCRYPTED_TRAFFIC=195 TTL_EXCEEDED=196 NO_NODE_ID=197 DROP_RATE_LIMITED=198 IGMP_HANDLED=199 ' +
    'IGMP_SUBSCRIBED=200 MULTICAST_HANDLED=201 DROP_HOST_NOT_READY=202 DROP_EP_NOT_READY=203 DROP_NO_EGRESS_IP=204 DROP_PUNT_PROXY=205'
  )
    .split(' ')
    .map((kv) => {
      const [k, v] = kv.split('=');
      return [k!, Number(v)] as const;
    }),
);

/** The comparable key of an enum value: its number when known, else the name itself. */
const enumKey = (table: ReadonlyMap<string, number>, v: unknown): number | string =>
  typeof v === 'number' ? v : typeof v === 'string' ? (table.get(v) ?? v) : 0;

/** Cilium monitor message type of L7 access-log events (pkg/monitor/api MessageTypeAccessLog). */
const MESSAGE_TYPE_ACCESS_LOG = 129;
/** Cilium's default cluster name, which Hubble assumes for node names without `cluster/`. */
const DEFAULT_CLUSTER = 'default';

// --- compile-time helpers ----------------------------------------------------------------------

interface Ctx {
  readonly path: string;
  readonly filter: Rec;
}

function strings(v: unknown, path: string): string[] {
  if (!Array.isArray(v)) throw new FilterError(path, 'must be a list of strings');
  // An index loop, not forEach: a sparse array's holes are errors, not skipped.
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== 'string') throw new FilterError(`${path}[${i}]`, 'must be a string');
  return v as string[];
}

function records(v: unknown, path: string): Rec[] {
  if (!Array.isArray(v)) throw new FilterError(path, 'must be a list of messages');
  for (let i = 0; i < v.length; i++) if (rec(v[i]) === undefined || Array.isArray(v[i])) throw new FilterError(`${path}[${i}]`, 'must be a message');
  return v as Rec[];
}

function optString(r: Rec, key: string, path: string): string {
  const v = r[key];
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new FilterError(`${path}.${key}`, 'must be a string');
  return v;
}

function optBool(r: Rec, key: string, path: string): boolean {
  const v = r[key];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new FilterError(`${path}.${key}`, 'must be a boolean');
  return v;
}

function optInt(r: Rec, key: string, path: string, min: number, max: number): number {
  const v = r[key];
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new FilterError(`${path}.${key}`, `must be an integer in ${min}..${max}`);
  }
  return v;
}

const json = (v: unknown): string => {
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return String(v);
  }
};

function enumValues(v: unknown, path: string, table: ReadonlyMap<string, number> | undefined, what: string): Set<number | string> {
  if (!Array.isArray(v)) throw new FilterError(path, `must be a list of ${what} values`);
  const out = new Set<number | string>();
  v.forEach((e, i) => {
    if (typeof e === 'number' && Number.isInteger(e) && e >= 0 && e <= 0x7fffffff) out.add(e);
    else if (typeof e === 'string' && table !== undefined && table.has(e)) out.add(table.get(e)!);
    else if (typeof e === 'string' && table === undefined && /^[A-Z][A-Z0-9_]*$/.test(e)) out.add(enumKey(DROP_REASON, e));
    else throw new FilterError(`${path}[${i}]`, `${json(e)} is not a ${what}`);
  });
  return out;
}

function re2(pattern: string, path: string): RE2JS {
  try {
    return RE2JS.compile(pattern);
  } catch (err) {
    throw new FilterError(path, `${json(pattern)} is not a valid RE2 regular expression: ${err instanceof Error ? err.message : String(err)}`);
  }
}

// --- fields ------------------------------------------------------------------------------------

const endpointOf = (side: 'source' | 'destination') => (f: Rec): Rec | undefined => rec(f[side]);

function ipField(side: 'source' | 'destination'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const exact: string[] = [];
    const cidrs: Cidr[] = [];
    strings(v, c.path).forEach((s, i) => {
      if (s.includes('/')) {
        const cidr = parseCidr(s);
        if (cidr === undefined) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not an IP or CIDR`);
        cidrs.push(cidr);
      } else {
        if (!isIP(s)) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not an IP or CIDR`);
        exact.push(s);
      }
    });
    return (f) => {
      // Hubble compares exact addresses as text and CIDRs on the parsed address.
      const ip = str(rec(f['IP'])?.[side]);
      if (ip === '') return false;
      for (const e of exact) if (e === ip) return true;
      return cidrs.length > 0 && cidrsContain(cidrs, ip);
    };
  };
}

/** `[namespace/][name-prefix]`: Hubble's ParseNamespaceName (no namespace means "default"). */
function namespacedField(get: (f: Rec) => Rec | undefined, nameKey: string): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const filters = strings(v, c.path).map((s, i) => {
      const parts = s.split('/');
      const [ns, prefix] = parts.length > 1 ? [parts[0]!, parts[1]!] : s === '' ? ['', ''] : [DEFAULT_NAMESPACE, s];
      if (ns === '' && prefix === '') throw new FilterError(`${c.path}[${i}]`, `${json(s)} must be [namespace/][<name>]`);
      return { ns, prefix };
    });
    return (f) => {
      const r = get(f);
      const ns = str(r?.['namespace']);
      const name = str(r?.[nameKey]);
      if (ns === '' && name === '') return false;
      for (const nf of filters) if (nf.ns === ns && name.startsWith(nf.prefix)) return true;
      return false;
    };
  };
}
const DEFAULT_NAMESPACE = 'default';

function labelField(side: 'source' | 'destination'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const selectors: LabelSelector[] = strings(v, c.path).map((s, i) => {
      try {
        return compileSelector(s);
      } catch (err) {
        if (err instanceof SelectorError) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not a label selector: ${err.message}`);
        throw err;
      }
    });
    return (f) => {
      const labels = list(rec(f[side])?.['labels']);
      for (const s of selectors) if (s.matches(labels)) return true;
      return false;
    };
  };
}

function workloadField(side: 'source' | 'destination'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const wanted = records(v, c.path).map((w, i) => ({
      name: optString(w, 'name', `${c.path}[${i}]`),
      kind: optString(w, 'kind', `${c.path}[${i}]`),
    }));
    return (f) => {
      const ws = list(rec(f[side])?.['workloads']);
      if (ws === undefined) return false;
      for (const w of ws) {
        const wr = rec(w);
        const name = str(wr?.['name']);
        const kind = str(wr?.['kind']);
        for (const x of wanted) if ((x.name === '' || x.name === name) && (x.kind === '' || x.kind === kind)) return true;
      }
      return false;
    };
  };
}

function identityField(side: 'source' | 'destination'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    if (!Array.isArray(v)) throw new FilterError(c.path, 'must be a list of identities');
    const ids = new Set<number>();
    v.forEach((e, i) => {
      if (typeof e !== 'number' || !Number.isInteger(e) || e < 0 || e > 0xffffffff) throw new FilterError(`${c.path}[${i}]`, `${json(e)} is not a uint32 identity`);
      ids.add(e);
    });
    return (f) => {
      const ep = rec(f[side]);
      return ep !== undefined && ids.has(num(ep['identity']));
    };
  };
}

function clusterField(side: 'source' | 'destination'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const names = strings(v, c.path);
    names.forEach((n, i) => {
      if (n === '') throw new FilterError(`${c.path}[${i}]`, 'name must not be empty');
    });
    return (f) => names.includes(str(rec(f[side])?.['cluster_name']));
  };
}

/** Hubble's FQDN pattern: `*` any run of [-.0-9a-z], otherwise [-0-9_a-z.] literally; lowercased. */
function fqdnPatternRegexp(pattern: string, path: string): string {
  const p = pattern.trim().replace(/\.$/, '').toLowerCase();
  if (p === '') throw new FilterError(path, 'empty pattern');
  if (p.endsWith('.')) throw new FilterError(path, 'multiple trailing dots in pattern');
  let out = '';
  for (const ch of p) {
    if (ch === '.') out += '\\.';
    else if (ch === '*') out += '[-.0-9a-z]*';
    else if (ch === '-' || ch === '_' || (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z')) out += ch;
    else throw new FilterError(path, `${json(ch)}: invalid rune in pattern ${json(pattern)}`);
  }
  return out;
}
const FQDN_RE = '(?:[-0-9_a-z]+(?:\\.[-0-9_a-z]+)*)';

function fqdnField(key: 'source_names' | 'destination_names'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const alts = strings(v, c.path).map((p, i) => fqdnPatternRegexp(p, `${c.path}[${i}]`));
    const re = re2(`\\A(?:${alts.join('|')})\\z`, c.path);
    return (f) => {
      const names = list(f[key]);
      if (names === undefined) return false;
      for (const n of names) if (typeof n === 'string' && re.matches(n)) return true;
      return false;
    };
  };
}

/** `[cluster/]node` patterns (each side an FQDN pattern, empty = any); a bare node name is in `default/`. */
function nodeNameField(v: unknown, c: Ctx): Pred {
  const alts = strings(v, c.path).map((p, i) => {
    const path = `${c.path}[${i}]`;
    if (p === '') throw new FilterError(path, 'empty pattern');
    const parts = p.split('/');
    if (parts.length > 2) throw new FilterError(path, `${json(p)}: too many slashes in pattern`);
    const [cluster, node] = parts.length === 2 ? [parts[0]!, parts[1]!] : ['', parts[0]!];
    return `${cluster === '' ? FQDN_RE : fqdnPatternRegexp(cluster, path)}/${node === '' ? FQDN_RE : fqdnPatternRegexp(node, path)}`;
  });
  const re = re2(`\\A(?:${alts.join('|')})\\z`, c.path);
  // Flows of one agent carry one node name: remember the last answer instead of re-running the regex.
  let lastName = '';
  let lastResult = false;
  return (f) => {
    const name = str(f['node_name']);
    if (name === '') return false;
    if (name !== lastName) {
      lastName = name;
      lastResult = re.matches(name.includes('/') ? name : `${DEFAULT_CLUSTER}/${name}`);
    }
    return lastResult;
  };
}

function portField(side: 'source_port' | 'destination_port'): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const ports = new Set<number>();
    strings(v, c.path).forEach((s, i) => {
      // Go's strconv.ParseUint(s, 10, 16).
      const n = /^[0-9]+$/.test(s) ? Number(s) : NaN;
      if (!(n <= 65535)) throw new FilterError(`${c.path}[${i}]`, `${json(s)} is not a port (0..65535)`);
      ports.add(n);
    });
    return (f) => {
      const l4 = rec(f['l4']);
      if (l4 === undefined) return false;
      const p = rec(l4['TCP']) ?? rec(l4['UDP']) ?? rec(l4['SCTP']);
      return p !== undefined && ports.has(num(p[side]) & 0xffff);
    };
  };
}

const L4_PROTOCOLS = ['icmp', 'icmpv4', 'icmpv6', 'tcp', 'udp', 'sctp'];
const L7_PROTOCOLS = ['dns', 'http', 'kafka'];
function protocolField(v: unknown, c: Ctx): Pred {
  let tcp = false, udp = false, sctp = false, icmp4 = false, icmp6 = false, dns = false, http = false, kafka = false;
  strings(v, c.path).forEach((s, i) => {
    const p = s.toLowerCase();
    if (!L4_PROTOCOLS.includes(p) && !L7_PROTOCOLS.includes(p)) {
      throw new FilterError(`${c.path}[${i}]`, `unknown protocol ${json(s)} (want one of ${[...L4_PROTOCOLS, ...L7_PROTOCOLS].join(', ')})`);
    }
    tcp ||= p === 'tcp';
    udp ||= p === 'udp';
    sctp ||= p === 'sctp';
    icmp4 ||= p === 'icmp' || p === 'icmpv4';
    icmp6 ||= p === 'icmp' || p === 'icmpv6';
    dns ||= p === 'dns';
    http ||= p === 'http';
    kafka ||= p === 'kafka';
  });
  return (f) => {
    const l4 = rec(f['l4']);
    if (l4 !== undefined) {
      if (tcp && rec(l4['TCP']) !== undefined) return true;
      if (udp && rec(l4['UDP']) !== undefined) return true;
      if (sctp && rec(l4['SCTP']) !== undefined) return true;
      if (icmp4 && rec(l4['ICMPv4']) !== undefined) return true;
      if (icmp6 && rec(l4['ICMPv6']) !== undefined) return true;
    }
    const l7 = rec(f['l7']);
    if (l7 !== undefined) {
      if (dns && rec(l7['dns']) !== undefined) return true;
      if (http && rec(l7['http']) !== undefined) return true;
      if (kafka && rec(l7['kafka']) !== undefined) return true;
    }
    return false;
  };
}

const TCP_FLAGS = ['FIN', 'SYN', 'RST', 'PSH', 'ACK', 'URG', 'ECE', 'CWR', 'NS'] as const;
function tcpFlagsField(v: unknown, c: Ctx): Pred {
  const masks = records(v, c.path).map((r, i) => {
    let m = 0;
    TCP_FLAGS.forEach((name, bit) => {
      if (optBool(r, name, `${c.path}[${i}]`)) m |= 1 << bit;
    });
    return m;
  });
  return (f) => {
    const flags = rec(rec(rec(f['l4'])?.['TCP'])?.['flags']);
    if (flags === undefined) return false;
    let have = 0;
    for (let bit = 0; bit < TCP_FLAGS.length; bit++) if (flags[TCP_FLAGS[bit]!] === true) have |= 1 << bit;
    for (const m of masks) if ((have & m) === m) return true;
    return false;
  };
}

function replyField(v: unknown, c: Ctx): Pred {
  if (!Array.isArray(v)) throw new FilterError(c.path, 'must be a list of booleans');
  let wantTrue = false, wantFalse = false;
  v.forEach((b, i) => {
    if (typeof b !== 'boolean') throw new FilterError(`${c.path}[${i}]`, `${json(b)} is not a boolean`);
    if (b) wantTrue = true;
    else wantFalse = true;
  });
  return (f) => {
    // is_reply is a BoolValue: absent = unknown; `{}` = false (defaults are not filled in).
    const isReply = rec(f['is_reply']);
    // Hubble reads an unknown is_reply on a DROPPED flow as false (older clients' `reply` field).
    if (isReply === undefined && enumKey(VERDICT, f['verdict']) !== 2) return false;
    return isReply?.['value'] === true ? wantTrue : wantFalse;
  };
}

function eventTypeField(v: unknown, c: Ctx): Pred {
  const types = records(v, c.path).map((r, i) => ({
    type: optInt(r, 'type', `${c.path}[${i}]`, -0x80000000, 0x7fffffff),
    matchSubType: optBool(r, 'match_sub_type', `${c.path}[${i}]`),
    subType: optInt(r, 'sub_type', `${c.path}[${i}]`, -0x80000000, 0x7fffffff),
  }));
  return (f) => {
    const ev = rec(f['event_type']);
    if (ev === undefined) return false;
    const type = num(ev['type']);
    const subType = num(ev['sub_type']);
    for (const t of types) {
      if (t.type !== 0 && t.type !== type) continue;
      if (t.matchSubType && t.subType !== subType) continue;
      return true;
    }
    return false;
  };
}

function enumField(table: ReadonlyMap<string, number> | undefined, what: string, get: (f: Rec) => unknown): (v: unknown, c: Ctx) => Pred {
  return (v, c) => {
    const wanted = enumValues(v, c.path, table, what);
    return (f) => wanted.has(enumKey(table ?? DROP_REASON, get(f)));
  };
}

function dnsQueryField(v: unknown, c: Ctx): Pred {
  const res = strings(v, c.path).map((p, i) => re2(p, `${c.path}[${i}]`));
  return (f) => {
    const dns = rec(rec(f['l7'])?.['dns']);
    if (dns === undefined) return false;
    const q = str(dns['query']);
    for (const re of res) if (re.test(q)) return true;
    return false;
  };
}

/** The HTTP filters need the event type filter to allow L7 (access log) events, as in Hubble. */
function requireL7EventType(c: Ctx, what: string): void {
  const types = c.filter['event_type'];
  if (!Array.isArray(types) || types.length === 0) return;
  if (types.some((t) => rec(t)?.['type'] === MESSAGE_TYPE_ACCESS_LOG)) return;
  throw new FilterError(c.path, `filtering by ${what} requires the event type filter to only match 'l7' events`);
}

const httpOf = (f: Rec): Rec | undefined => rec(rec(f['l7'])?.['http']);

function httpStatusField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http status code');
  const full: string[] = [];
  const prefixes: string[] = [];
  strings(v, c.path).forEach((s, i) => {
    if (/^[1-5][0-9]{2}$/.test(s)) full.push(s);
    else if (/^[1-5][0-9]?\+$/.test(s)) prefixes.push(s.slice(0, -1));
    else throw new FilterError(`${c.path}[${i}]`, `invalid status code prefix ${json(s)} (e.g. "404", "4+", "50+")`);
  });
  return (f) => {
    const code = num(httpOf(f)?.['code']);
    if (code === 0) return false;
    const text = String(code).padStart(3, '0');
    return full.includes(text) || prefixes.some((p) => text.startsWith(p));
  };
}

function httpMethodField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http method');
  const methods = strings(v, c.path).map((m) => m.toLowerCase());
  return (f) => {
    const m = str(httpOf(f)?.['method']);
    return m !== '' && methods.includes(m.toLowerCase());
  };
}

/** The path of a request URI (absolute URI or absolute path), or undefined (Go's ParseRequestURI, roughly). */
function requestPath(url: string): string | undefined {
  if (url.startsWith('/')) {
    const q = url.indexOf('?');
    return q < 0 ? url : url.slice(0, q);
  }
  try {
    return decodeURIComponent(new URL(url).pathname);
  } catch {
    return undefined;
  }
}

function httpPathField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http path');
  const res = strings(v, c.path).map((p, i) => re2(p, `${c.path}[${i}]`));
  return (f) => {
    const url = str(httpOf(f)?.['url']);
    if (url === '') return false;
    const path = requestPath(url);
    return path !== undefined && res.some((re) => re.test(path));
  };
}

function httpUrlField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http url');
  const res = strings(v, c.path).map((p, i) => re2(p, `${c.path}[${i}]`));
  return (f) => {
    const url = str(httpOf(f)?.['url']);
    return url !== '' && res.some((re) => re.test(url));
  };
}

function httpHeaderField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http header');
  const wanted = records(v, c.path).map((h, i) => ({ key: optString(h, 'key', `${c.path}[${i}]`), value: optString(h, 'value', `${c.path}[${i}]`) }));
  return (f) => {
    const headers = list(httpOf(f)?.['headers']);
    if (headers === undefined) return false;
    for (const h of headers) {
      const hr = rec(h);
      const key = str(hr?.['key']);
      const value = str(hr?.['value']);
      for (const w of wanted) if (w.key === key && w.value === value) return true;
    }
    return false;
  };
}

function uuidField(v: unknown, c: Ctx): Pred {
  const ids = strings(v, c.path);
  return (f) => ids.includes(str(f['uuid']));
}

function traceIdField(v: unknown, c: Ctx): Pred {
  const ids = strings(v, c.path);
  return (f) => ids.includes(str(rec(rec(f['trace_context'])?.['parent'])?.['trace_id']));
}

/** Fields of FlowFilter we refuse (see the file comment), with the reason the client gets. */
const UNSUPPORTED: Readonly<Record<string, string>> = {
  source_ip_xlated: 'this agent does not observe translated source addresses',
  interface: 'this agent does not report network interfaces in flows',
  node_labels: 'this agent does not attach node labels to flows',
  encrypted: 'this agent does not report encryption',
  ip_trace_id: 'this agent does not report IP option trace IDs',
};

const FIELDS: Readonly<Record<string, (v: unknown, c: Ctx) => Pred>> = {
  uuid: uuidField,
  source_ip: ipField('source'),
  destination_ip: ipField('destination'),
  source_pod: namespacedField(endpointOf('source'), 'pod_name'),
  destination_pod: namespacedField(endpointOf('destination'), 'pod_name'),
  source_service: namespacedField((f) => rec(f['source_service']), 'name'),
  destination_service: namespacedField((f) => rec(f['destination_service']), 'name'),
  source_fqdn: fqdnField('source_names'),
  destination_fqdn: fqdnField('destination_names'),
  source_label: labelField('source'),
  destination_label: labelField('destination'),
  source_workload: workloadField('source'),
  destination_workload: workloadField('destination'),
  source_identity: identityField('source'),
  destination_identity: identityField('destination'),
  source_cluster_name: clusterField('source'),
  destination_cluster_name: clusterField('destination'),
  verdict: enumField(VERDICT, 'verdict', (f) => f['verdict']),
  traffic_direction: enumField(TRAFFIC_DIRECTION, 'traffic direction', (f) => f['traffic_direction']),
  ip_version: enumField(IP_VERSION, 'IP version', (f) => rec(f['IP'])?.['ipVersion']),
  drop_reason_desc: (v, c) => {
    const inner = enumField(undefined, 'drop reason', (f) => f['drop_reason_desc'])(v, c);
    // Hubble: only DROPPED flows have a drop reason to match.
    return (f) => enumKey(VERDICT, f['verdict']) === 2 && inner(f);
  },
  event_type: eventTypeField,
  protocol: protocolField,
  source_port: portField('source_port'),
  destination_port: portField('destination_port'),
  reply: replyField,
  dns_query: dnsQueryField,
  tcp_flags: tcpFlagsField,
  node_name: nodeNameField,
  http_status_code: httpStatusField,
  http_method: httpMethodField,
  http_path: httpPathField,
  http_url: httpUrlField,
  http_header: httpHeaderField,
  trace_id: traceIdField,
};

function compileOne(filter: unknown, path: string): Pred {
  const r = rec(filter);
  if (r === undefined || Array.isArray(filter)) throw new FilterError(path, 'must be a FlowFilter message');
  const preds: Pred[] = [];
  for (const key of Object.keys(r)) {
    const v = r[key];
    const fpath = `${path}.${key}`;
    if (key === 'experimental') {
      const cel = rec(v)?.['cel_expression'];
      if (Array.isArray(cel) && cel.length > 0) throw new FilterError(`${fpath}.cel_expression`, 'CEL expressions are not supported by this agent');
      continue;
    }
    if (v === undefined || v === null || (Array.isArray(v) && v.length === 0)) continue;
    const reason = UNSUPPORTED[key];
    if (reason !== undefined && Object.hasOwn(UNSUPPORTED, key)) throw new FilterError(fpath, `not supported: ${reason}`);
    if (!Object.hasOwn(FIELDS, key)) throw new FilterError(fpath, 'is not a FlowFilter field');
    preds.push(FIELDS[key]!(v, { path: fpath, filter: r }));
  }
  if (preds.length === 1) return preds[0]!;
  return (f) => {
    for (const p of preds) if (!p(f)) return false;
    return true;
  };
}

function compileList(filters: unknown, name: string): Pred[] {
  if (filters === undefined || filters === null) return [];
  if (!Array.isArray(filters)) throw new FilterError(name, 'must be a list of FlowFilter');
  return Array.from(filters as unknown[], (f, i) => compileOne(f, `${name}[${i}]`));
}

const EMPTY_FLOW: Rec = {};

/**
 * Compiles GetFlowsRequest.whitelist / .blacklist (lists of FlowFilter, or undefined/null for none)
 * once per request. Throws FilterError naming the field on a bad filter.
 */
export function compileFlowFilters(whitelist: unknown, blacklist: unknown): FlowMatcher {
  const white = compileList(whitelist, 'whitelist');
  const black = compileList(blacklist, 'blacklist');
  return {
    match(flow) {
      const f = rec(flow) ?? EMPTY_FLOW;
      if (white.length > 0) {
        let any = false;
        for (const p of white) {
          if (p(f)) {
            any = true;
            break;
          }
        }
        if (!any) return false;
      }
      for (const p of black) if (p(f)) return false;
      return true;
    },
  };
}
