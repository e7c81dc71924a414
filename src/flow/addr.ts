/** Formats addresses from raw record bytes (pure; used by the decoders of both OSes' plugins). */

/** An IPv4 address from 4 bytes at `off` (network order). */
export function ipv4At(v: DataView, off: number): string {
  return `${v.getUint8(off)}.${v.getUint8(off + 1)}.${v.getUint8(off + 2)}.${v.getUint8(off + 3)}`;
}

/** An IPv6 address from 16 bytes at `off`, in RFC 5952 form (longest zero run as ::). */
export function ipv6At(v: DataView, off: number): string {
  const words: number[] = [];
  for (let i = 0; i < 8; i++) words.push(v.getUint16(off + i * 2, false));
  if (words.slice(0, 6).every((w, i) => (i < 5 ? w === 0 : w === 0xffff))) return `::ffff:${ipv4At(v, off + 12)}`;
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) { bestAt = i; bestLen = j - i; }
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (bestAt < 0) return hex.join(':');
  return `${hex.slice(0, bestAt).join(':')}::${hex.slice(bestAt + bestLen).join(':')}`;
}

/** An address of family 4 or 6 at `off` (IPv4 in the first 4 bytes). */
export function ipAt(v: DataView, off: number, family: number): string {
  return family === 6 ? ipv6At(v, off) : ipv4At(v, off);
}

/**
 * Address strings for the decoders, each distinct address formatted once: a flow's addresses are
 * then the same string objects every time, so the enricher's and the Metrics Module's Map reads
 * never hash a new string. IPv4 is keyed by its u32; IPv6 by a hash of its four words, checked
 * against the words kept with the string. Past `limit` addresses of a family, that family's table
 * starts afresh.
 */
export interface AddressNames {
  /** An IPv4 address from its big-endian u32. */
  v4(n: number): string;
  /** An IPv6 address from 16 bytes at `off`. */
  v6(v: DataView, off: number): string;
  /** An address of family 4 (its first 4 bytes) or 6 at `off`. */
  at(v: DataView, off: number, family: number): string;
}

interface V6Name {
  readonly w0: number;
  readonly w1: number;
  readonly w2: number;
  readonly w3: number;
  readonly text: string;
}

export function createAddressNames(limit = 65_536): AddressNames {
  const four = new Map<number, string>();
  const six = new Map<number, V6Name>();
  const v4 = (n: number): string => {
    let s = four.get(n);
    if (s === undefined) {
      s = `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
      if (four.size >= limit) four.clear();
      four.set(n, s);
    }
    return s;
  };
  const v6 = (v: DataView, off: number): string => {
    const w0 = v.getUint32(off, false);
    const w1 = v.getUint32(off + 4, false);
    const w2 = v.getUint32(off + 8, false);
    const w3 = v.getUint32(off + 12, false);
    const h = (w0 ^ Math.imul(w1, 0x9e3779b1) ^ Math.imul(w2, 0x85ebca6b) ^ Math.imul(w3, 0xc2b2ae35)) | 0;
    const e = six.get(h);
    if (e !== undefined && e.w3 === w3 && e.w2 === w2 && e.w1 === w1 && e.w0 === w0) return e.text;
    const text = ipv6At(v, off);
    if (six.size >= limit) six.clear();
    six.set(h, { w0, w1, w2, w3, text }); // a colliding address replaces the other: both still come out right
    return text;
  };
  return { v4, v6, at: (v, off, family) => (family === 6 ? v6(v, off) : v4(v.getUint32(off, false))) };
}
