/**
 * IP and CIDR parsing for the Hubble flow filter, with Go's `net.ParseIP` / `net.ParseCIDR` /
 * `IPNet.Contains` semantics (what Hubble's source_ip / destination_ip filters use):
 * - IPv4 is four decimal fields, 0..255, no leading zeros (Go ≥ 1.17); IPv6 is RFC 4291 text with at
 *   most one `::` and an optional dotted IPv4 tail; no zones.
 * - An IPv4 CIDR also contains IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`); an IPv6 CIDR never
 *   contains an address that has an IPv4 form (Go's Contains turns those into 4 bytes first).
 *
 * Parsing at match time writes into one module scratch buffer: no allocation per flow.
 */

/** Scratch: the 8 groups of the last parsed IPv6 address. */
const groups = new Uint16Array(8);

const isDigit = (c: number): boolean => c >= 48 && c <= 57;
const hexVal = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= 97 && c <= 102 ? c - 87 : c >= 65 && c <= 70 ? c - 55 : -1;

/** s[start, end) as an IPv4 address (uint32), or -1. */
function parseV4(s: string, start: number, end: number): number {
  let value = 0;
  let fields = 0;
  let i = start;
  while (fields < 4) {
    if (fields > 0) {
      if (i >= end || s.charCodeAt(i) !== 46 /* . */) return -1;
      i++;
    }
    const first = i;
    let n = 0;
    while (i < end && isDigit(s.charCodeAt(i))) {
      n = n * 10 + (s.charCodeAt(i) - 48);
      i++;
      if (i - first > 3) return -1;
    }
    if (i === first || n > 255 || (i - first > 1 && s.charCodeAt(first) === 48)) return -1;
    value = value * 256 + n;
    fields++;
  }
  return i === end ? value >>> 0 : -1;
}

/** s[start, end) as IPv6 into `groups`; false when it is not one. */
function parseV6(s: string, start: number, end: number): boolean {
  let g = 0;
  let ellipsis = -1;
  let i = start;
  if (end - start >= 2 && s.charCodeAt(i) === 58 && s.charCodeAt(i + 1) === 58) {
    ellipsis = 0;
    i += 2;
    if (i === end) {
      groups.fill(0);
      return true;
    }
  }
  while (i < end) {
    // A hex group, or a dotted IPv4 tail.
    let n = 0;
    let j = i;
    while (j < end && j - i < 5) {
      const h = hexVal(s.charCodeAt(j));
      if (h < 0) break;
      n = n * 16 + h;
      j++;
    }
    if (j - i > 4 || j === i) return false;
    if (j < end && s.charCodeAt(j) === 46 /* . */) {
      if (ellipsis < 0 && g !== 6) return false;
      if (g + 2 > 8) return false;
      const v4 = parseV4(s, i, end);
      if (v4 < 0) return false;
      groups[g++] = v4 >>> 16;
      groups[g++] = v4 & 0xffff;
      i = end;
      break;
    }
    groups[g++] = n;
    i = j;
    if (i === end) break;
    if (s.charCodeAt(i) !== 58 /* : */ || i + 1 === end) return false;
    i++;
    if (s.charCodeAt(i) === 58) {
      if (ellipsis >= 0) return false;
      ellipsis = g;
      i++;
      if (i === end) break;
    }
    if (g === 8) return false;
  }
  if (ellipsis >= 0) {
    if (g === 8) return false;
    const move = g - ellipsis;
    for (let k = move - 1; k >= 0; k--) groups[8 - move + k] = groups[ellipsis + k]!;
    for (let k = ellipsis; k < 8 - move; k++) groups[k] = 0;
  } else if (g !== 8) {
    return false;
  }
  return true;
}

/** True when `groups` holds an IPv4-mapped address (::ffff:a.b.c.d). */
const isV4Mapped = (): boolean =>
  groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff;

/**
 * Parses `s` as an address: returns 4 for IPv4 (value in the result's v4), 6 for IPv6 (in `groups`),
 * 0 when it is not an address. An IPv4-mapped IPv6 address is reported as IPv4, as Go's To4 does.
 */
const parsed = { v4: 0 };
function parseAddr(s: string, start: number, end: number): 0 | 4 | 6 {
  const v4 = parseV4(s, start, end);
  if (v4 >= 0) {
    parsed.v4 = v4;
    return 4;
  }
  if (!parseV6(s, start, end)) return 0;
  if (isV4Mapped()) {
    parsed.v4 = ((groups[6]! << 16) | groups[7]!) >>> 0;
    return 4;
  }
  return 6;
}

/** Go's net.ParseIP(s) != nil. */
export function isIP(s: string): boolean {
  return parseAddr(s, 0, s.length) !== 0;
}

/** A parsed CIDR (network bits only). */
export interface Cidr {
  /** 4: matches IPv4 (and IPv4-mapped) addresses; 6: other IPv6 addresses. */
  readonly family: 4 | 6;
  readonly bits: number;
  /** IPv4 network (masked). */
  readonly v4: number;
  /** IPv6 network groups (masked). */
  readonly v6: Uint16Array;
}

const v4Mask = (bits: number): number => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);

/** Go's net.ParseCIDR: the network, or undefined when `s` is not a CIDR. */
export function parseCidr(s: string): Cidr | undefined {
  const slash = s.indexOf('/');
  if (slash < 0) return undefined;
  let bits = 0;
  let i = slash + 1;
  if (i === s.length) return undefined;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!isDigit(c)) return undefined;
    bits = bits * 10 + (c - 48);
    if (bits > 0xffffff) return undefined;
  }
  // Go decides the family from the text: dotted IPv4 is 4 bytes, any IPv6 text (even ::ffff:a.b.c.d) 16.
  const v4 = parseV4(s, 0, slash);
  if (v4 >= 0) {
    if (bits > 32) return undefined;
    return { family: 4, bits, v4: (v4 & v4Mask(bits)) >>> 0, v6: new Uint16Array(8) };
  }
  if (!parseV6(s, 0, slash) || bits > 128) return undefined;
  const net = new Uint16Array(groups);
  for (let k = 0; k < 8; k++) {
    const keep = Math.max(0, Math.min(16, bits - k * 16));
    net[k] = keep === 0 ? 0 : net[k]! & ((0xffff << (16 - keep)) & 0xffff);
  }
  // A 16-byte network whose IPv4 form exists still stays IPv6 in Go: it never contains an address
  // that Contains turns into 4 bytes.
  return { family: 6, bits, v4: 0, v6: net };
}

/** Whether any of `cidrs` contains the address text `ip` (false when `ip` is not an address). */
export function cidrsContain(cidrs: readonly Cidr[], ip: string): boolean {
  const family = parseAddr(ip, 0, ip.length);
  if (family === 0) return false;
  for (const c of cidrs) {
    if (c.family !== family) continue;
    if (family === 4) {
      if (((parsed.v4 & v4Mask(c.bits)) >>> 0) === c.v4) return true;
      continue;
    }
    let inside = true;
    for (let k = 0; k < 8 && inside; k++) {
      const keep = Math.max(0, Math.min(16, c.bits - k * 16));
      if (keep === 0) break;
      if ((groups[k]! & ((0xffff << (16 - keep)) & 0xffff)) !== c.v6[k]) inside = false;
    }
    if (inside) return true;
  }
  return false;
}
