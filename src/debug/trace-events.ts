/**
 * The events of `kubectl retina bpftrace`: the program's lines (trace-script.ts) decoded into events
 * with names (drop and RST reasons from the kernel's own tables, errno and TCP state names), and
 * printed as Retina prints them: a table, or one JSON object per line (`-o json`) with Retina's keys
 * (time, type, probe, src_ip, src_port, dst_ip, dst_port, reason_code, errno, tcp_state) and ours
 * (reason, error, state, family, protocol, location). Pure.
 */
import type { KernelFacts } from './trace-script.js';

export type TraceEventType = 'DROP' | 'NFQ_DROP' | 'RST_SENT' | 'RST_RECV' | 'SOCK_ERR' | 'RETRANS';

export interface TraceEvent {
  readonly time: string;
  readonly type: TraceEventType;
  readonly probe: string;
  readonly family: 'IPv4' | 'IPv6';
  readonly protocol: string;
  readonly src_ip: string;
  readonly src_port: number;
  readonly dst_ip: string;
  readonly dst_port: number;
  readonly reason_code?: number;
  readonly reason?: string;
  readonly location?: string;
  readonly errno?: number;
  readonly error?: string;
  readonly tcp_state?: number;
  readonly state?: string;
}

const PROBES: Readonly<Record<TraceEventType, string>> = {
  DROP: 'kfree_skb', NFQ_DROP: 'kfree_skb', RST_SENT: 'tcp_send_reset', RST_RECV: 'tcp_receive_reset', SOCK_ERR: 'inet_sk_error_report', RETRANS: 'tcp_retransmit_skb',
};
const TCP_STATES = ['', 'ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT', 'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING', 'NEW_SYN_RECV'];
const ERRNOS: Readonly<Record<number, string>> = {
  1: 'EPERM', 13: 'EACCES', 32: 'EPIPE', 71: 'EPROTO', 90: 'EMSGSIZE', 99: 'EADDRNOTAVAIL', 100: 'ENETDOWN', 101: 'ENETUNREACH', 103: 'ECONNABORTED',
  104: 'ECONNRESET', 110: 'ETIMEDOUT', 111: 'ECONNREFUSED', 112: 'EHOSTDOWN', 113: 'EHOSTUNREACH',
};
const L4: Readonly<Record<number, string>> = { 1: 'ICMP', 6: 'TCP', 17: 'UDP', 58: 'ICMPv6', 132: 'SCTP' };

/** The address in the event's words (as read from memory, little-endian), printed canonically. */
function address(family: number, words: readonly bigint[]): string {
  const bytes = Buffer.alloc(16);
  words.forEach((w, i) => bytes.writeUInt32LE(Number(w & 0xffffffffn), i * 4));
  if (family === 2) return [...bytes.subarray(0, 4)].join('.');
  const groups = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2).toString(16)).join(':');
  return new URL(`http://[${groups}]/`).hostname.slice(1, -1); // RFC 5952 form (:: for the longest zero run)
}

/** The decoder of one trace's lines: the start line sets the clock, then each event line is an event. */
export class TraceDecoder {
  #startNs = 0n;
  #startMs = Date.now();
  readonly #facts: KernelFacts;
  constructor(facts: KernelFacts) {
    this.#facts = facts;
  }

  /** An event, 'start', 'end', or undefined for a line that is none of ours (bpftrace's own words). */
  decode(line: string, nowMs = Date.now()): TraceEvent | 'start' | 'end' | undefined {
    const f = line.trim().split(' ');
    if (f[0] === 'S' && f.length === 2) {
      this.#startNs = BigInt(f[1] as string);
      this.#startMs = nowMs;
      return 'start';
    }
    if (f[0] === 'Z' && f.length === 1) return 'end';
    if (f[0] !== 'E' || f.length !== 18 || !(f[1] as string in PROBES)) return undefined;
    const type = f[1] as TraceEventType;
    const n = f.slice(2, 9).map((x) => Number(x));
    const [code = 0, code2 = 0, family = 0, l4 = 0, sport = 0, dport = 0] = n.slice(1);
    const words = f.slice(9, 17).map((x) => BigInt(`0x${x}`));
    const ns = BigInt(f[2] as string);
    const time = new Date(this.#startMs + Number(ns - this.#startNs) / 1e6).toISOString();
    const base = {
      time, type, probe: PROBES[type], family: family === 2 ? 'IPv4' as const : 'IPv6' as const, protocol: L4[l4] ?? String(l4),
      src_ip: address(family, words.slice(0, 4)), src_port: sport, dst_ip: address(family, words.slice(4, 8)), dst_port: dport,
    };
    const extra = f[17] as string;
    switch (type) {
      case 'DROP':
      case 'NFQ_DROP':
        return { ...base, reason_code: code, reason: this.#facts.formats.get('skb/kfree_skb')?.reasons.get(code) ?? String(code), location: extra.replace(/\+0x[0-9a-f]+$/, '') };
      case 'RST_SENT': {
        const reason = this.#facts.formats.get('tcp/tcp_send_reset')?.reasons.get(code);
        // state 0: a RST sent for no socket (a closed port)
        return { ...base, ...(reason ? { reason_code: code, reason } : {}), ...(code2 ? { tcp_state: code2, state: TCP_STATES[code2] || String(code2) } : {}) };
      }
      case 'SOCK_ERR':
        return { ...base, errno: code, error: ERRNOS[code] ?? String(code) };
      case 'RETRANS':
        return { ...base, tcp_state: code, state: TCP_STATES[code] || String(code) };
      default:
        return base;
    }
  }
}

export const TABLE_HEADER = `${'TIME'.padEnd(24)} ${'TYPE'.padEnd(9)} ${'REASON'.padEnd(22)} ${'STATE'.padEnd(12)} ${'PROBE'.padEnd(21)} SRC -> DST`;

const endpoint = (ip: string, port: number, family: string): string => (family === 'IPv6' ? `[${ip}]` : ip) + (port ? `:${port}` : '');

/** One table row (Retina's columns; the reason named, the time with milliseconds). */
export function tableRow(e: TraceEvent): string {
  const reason = e.reason ?? e.error ?? '-';
  const state = e.state ?? '-';
  const why = e.type === 'NFQ_DROP' ? 'NFQUEUE' : reason;
  return `${e.time.padEnd(24)} ${e.type.padEnd(9)} ${why.padEnd(22)} ${state.padEnd(12)} ${e.probe.padEnd(21)} ${endpoint(e.src_ip, e.src_port, e.family)} -> ${endpoint(e.dst_ip, e.dst_port, e.family)} ${e.protocol}${e.location ? ` (${e.location})` : ''}`;
}
