/**
 * FlowFilter fields about protocols: L4 ports and protocol, TCP flags, and the L7 records (DNS
 * query, HTTP status, method, path, URL, headers).
 */
import { FilterError, json, list, num, optBool, optString, re2, rec, records, str, strings, type Ctx, type FieldCompiler, type Pred, type Rec } from './filter-base.js';

/** Cilium monitor message type of L7 access-log events (pkg/monitor/api MessageTypeAccessLog). */
const MESSAGE_TYPE_ACCESS_LOG = 129;

export function portField(side: 'source_port' | 'destination_port'): FieldCompiler {
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
export function protocolField(v: unknown, c: Ctx): Pred {
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
export function tcpFlagsField(v: unknown, c: Ctx): Pred {
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

export function dnsQueryField(v: unknown, c: Ctx): Pred {
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

export function httpStatusField(v: unknown, c: Ctx): Pred {
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

export function httpMethodField(v: unknown, c: Ctx): Pred {
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

export function httpPathField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http path');
  const res = strings(v, c.path).map((p, i) => re2(p, `${c.path}[${i}]`));
  return (f) => {
    const url = str(httpOf(f)?.['url']);
    if (url === '') return false;
    const path = requestPath(url);
    return path !== undefined && res.some((re) => re.test(path));
  };
}

export function httpUrlField(v: unknown, c: Ctx): Pred {
  requireL7EventType(c, 'http url');
  const res = strings(v, c.path).map((p, i) => re2(p, `${c.path}[${i}]`));
  return (f) => {
    const url = str(httpOf(f)?.['url']);
    return url !== '' && res.some((re) => re.test(url));
  };
}

export function httpHeaderField(v: unknown, c: Ctx): Pred {
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
