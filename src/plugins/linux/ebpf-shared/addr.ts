/** Formats addresses from raw record bytes (pure; used by the eBPF plugins' decoders). */

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
