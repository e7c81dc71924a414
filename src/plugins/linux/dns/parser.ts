/**
 * A DNS message parser (RFC 1035, with AAAA, SRV, HTTPS/SVCB type names), pure and defensive: it
 * reads from a DataView window, follows compression pointers with a hop limit, and never reads past
 * the window. A message cut short by the capture length keeps what was complete.
 */

export interface DnsQuestion {
  readonly name: string;
  readonly type: number;
}

export interface DnsAnswer {
  readonly name: string;
  readonly type: number;
  readonly ttl: number;
  /** A/AAAA: the address; CNAME/NS/PTR: the target name; other types: ''. */
  readonly data: string;
}

export interface DnsMessage {
  readonly id: number;
  readonly isResponse: boolean;
  readonly opcode: number;
  readonly rcode: number;
  /** The header's answer count (even when the capture cut answers off). */
  readonly answerCount: number;
  readonly questions: readonly DnsQuestion[];
  readonly answers: readonly DnsAnswer[];
  /** True when the capture ended before the message did. */
  readonly cut: boolean;
}

export class DnsParseError extends Error {
  override readonly name = 'DnsParseError';
}

const TYPE_NAMES: Readonly<Record<number, string>> = {
  1: 'A', 2: 'NS', 5: 'CNAME', 6: 'SOA', 12: 'PTR', 13: 'HINFO', 15: 'MX', 16: 'TXT', 28: 'AAAA', 33: 'SRV',
  35: 'NAPTR', 39: 'DNAME', 41: 'OPT', 43: 'DS', 46: 'RRSIG', 47: 'NSEC', 48: 'DNSKEY', 52: 'TLSA', 64: 'SVCB',
  65: 'HTTPS', 99: 'SPF', 251: 'IXFR', 252: 'AXFR', 255: 'ANY', 257: 'CAA',
};

const RCODE_NAMES: readonly string[] = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED', 'YXDOMAIN', 'YXRRSET', 'NXRRSET', 'NOTAUTH', 'NOTZONE'];

export const dnsTypeName = (t: number): string => TYPE_NAMES[t] ?? `TYPE${t}`;
export const dnsRcodeName = (r: number): string => RCODE_NAMES[r] ?? `RCODE${r}`;

const MAX_HOPS = 16;
const MAX_RECORDS = 64;

/**
 * Thrown inside the parser without allocating (no stack capture): garbage on port 53 is common and
 * must stay cheap. `parseDns` turns a reason into a DnsParseError; `tryParseDns` into undefined.
 */
class Invalid {
  constructor(readonly reason: string) {}
}
const CUT = new Invalid('cut');
const LOOP = new Invalid('compression loop');
const FORWARD = new Invalid('forward compression pointer');
const LABEL = new Invalid('reserved label type');
const LONG = new Invalid('name longer than 255 bytes');

/** Parses the message at [off, off + len) of `v`. Throws DnsParseError when it is not DNS. */
export function parseDns(v: DataView, off: number, len: number): DnsMessage {
  const m = tryParseDns(v, off, len);
  if (typeof m === 'string') throw new DnsParseError(m);
  return m;
}

/** Like parseDns, but returns why (a string) instead of throwing when it is not DNS. */
export function tryParseDns(v: DataView, off: number, len: number): DnsMessage | string {
  if (len < 12) return 'shorter than a DNS header';
  const end = off + len;
  const id = v.getUint16(off);
  const flags = v.getUint16(off + 2);
  const qd = v.getUint16(off + 4);
  const an = v.getUint16(off + 6);
  const opcode = (flags >> 11) & 0xf;
  if (opcode > 6 || opcode === 3) return 'reserved opcode';
  if (qd > MAX_RECORDS) return 'too many questions';
  const questions: DnsQuestion[] = [];
  const answers: DnsAnswer[] = [];
  let p = off + 12;
  let cut = false;
  const need = (n: number): void => {
    if (p + n > end) throw CUT;
  };
  try {
    for (let i = 0; i < qd; i++) {
      const [name, next] = readName(v, off, end, p);
      p = next;
      need(4);
      questions.push({ name, type: v.getUint16(p) });
      p += 4;
    }
    for (let i = 0; i < Math.min(an, MAX_RECORDS); i++) {
      const [name, next] = readName(v, off, end, p);
      p = next;
      need(10);
      const type = v.getUint16(p);
      const ttl = v.getUint32(p + 4);
      const rdlen = v.getUint16(p + 8);
      p += 10;
      need(rdlen);
      answers.push({ name, type, ttl, data: rdata(v, off, end, p, type, rdlen) });
      p += rdlen;
    }
  } catch (e) {
    if (!(e instanceof Invalid)) throw e;
    if (e !== CUT) return e.reason;
    cut = true;
  }
  if (qd > 0 && questions.length === 0) return 'no complete question';
  return { id, isResponse: (flags & 0x8000) !== 0, opcode, rcode: flags & 0xf, answerCount: an, questions, answers, cut };
}

function rdata(v: DataView, msg: number, end: number, p: number, type: number, len: number): string {
  if (type === 1 && len === 4) return `${v.getUint8(p)}.${v.getUint8(p + 1)}.${v.getUint8(p + 2)}.${v.getUint8(p + 3)}`;
  if (type === 28 && len === 16) {
    const w: string[] = [];
    for (let i = 0; i < 8; i++) w.push(v.getUint16(p + i * 2).toString(16));
    return compress6(w);
  }
  if (type === 5 || type === 2 || type === 12) return readName(v, msg, end, p)[0];
  return '';
}

function compress6(w: string[]): string {
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (w[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && w[j] === '0') j++;
    if (j - i > bestLen) { bestAt = i; bestLen = j - i; }
    i = j;
  }
  if (bestAt < 0) return w.join(':');
  return `${w.slice(0, bestAt).join(':')}::${w.slice(bestAt + bestLen).join(':')}`;
}

/** Reads a (possibly compressed) name at `p`; returns it (no trailing dot; '' for the root) and where the record goes on. */
function readName(v: DataView, msg: number, end: number, start: number): [string, number] {
  const labels: string[] = [];
  let p = start;
  let after = -1;
  let hops = 0;
  let total = 0;
  for (;;) {
    if (p >= end) throw CUT;
    const l = v.getUint8(p);
    if ((l & 0xc0) === 0xc0) {
      if (p + 1 >= end) throw CUT;
      if (++hops > MAX_HOPS) throw LOOP;
      const target = msg + (((l & 0x3f) << 8) | v.getUint8(p + 1));
      if (after < 0) after = p + 2;
      if (target >= p && hops === 1 && target >= start) throw FORWARD;
      p = target;
      continue;
    }
    if (l & 0xc0) throw LABEL;
    if (l === 0) {
      return [labels.join('.'), after >= 0 ? after : p + 1];
    }
    if (p + 1 + l > end) throw CUT;
    total += l + 1;
    if (total > 255) throw LONG;
    let s = '';
    for (let i = 0; i < l; i++) {
      const c = v.getUint8(p + 1 + i);
      s += c === 0x2e || c < 0x21 || c > 0x7e ? `\\${c.toString().padStart(3, '0')}` : String.fromCharCode(c);
    }
    labels.push(s);
    p += 1 + l;
  }
}
