/**
 * How a source's raw records are spread over the pipeline's workers (RawDecoderRef.partitionKey): a
 * hash of the key's bytes, scaled to the number of workers. packetparser's kernel program computes the
 * same hash of a record's addresses into the record itself (packet_event.peer_hash), so its key is
 * those 4 bytes.
 */

/** The bytes of a record that pick its worker (RawDecoderRef.partitionKey). */
export interface PartitionKey {
  readonly offset: number;
  readonly length: number;
  /**
   * The key is 4 bytes that already are a hash whose low 16 bits spread evenly (packetparser's
   * peer_hash, murmur3's finalizer in the kernel): they pick the worker as they are, not hashed again
   * (a worker walking a ring run reads the key of every record, its partitions' and the others').
   */
  readonly hashed?: boolean;
}

/**
 * A hash of `length` bytes at `offset` (whole 32-bit words, little-endian): each word mixed in with a
 * multiply and a shift, then murmur3's finalizer, so every bit of every word reaches every bit of the
 * hash. (A multiply alone carries bits only upwards: with FNV over words the low 16 bits of the hash
 * came from the low 16 bits of each word, an IPv4 address's first two octets, the same for every pod
 * of a cluster, and 94 % of the records went to one of two workers.) set_peer_hash() in
 * native-linux/packetparser/packetparser.bpf.c is this over a record's 32 bytes of addresses.
 */
export function keyHash(v: DataView, offset: number, length: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i + 4 <= length; i += 4) {
    h = Math.imul(h ^ v.getUint32(offset + i, true), 0x9e3779b1);
    h ^= h >>> 15;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/**
 * Which of `n` workers a record goes to, by keyHash of its key: the hash's low 16 bits scaled to
 * [0, n) with a multiply and a shift (`% n` is a floating-point remainder in JavaScript: 20 of the 48
 * ns a 32-byte key took on the AMD VM).
 */
export function partition(v: DataView, offset: number, length: number, n: number): number {
  return ((keyHash(v, offset, length) & 0xffff) * n) >>> 16;
}

/**
 * Which of `n` workers the record at `record` of `v` goes to by `key` (partition(), or a hashed key's
 * own low 16 bits scaled alike); partition 0 for a record of `size` bytes too short for the key.
 */
export function partitionOf(v: DataView, record: number, size: number, key: PartitionKey, n: number): number {
  if (size < key.offset + key.length) return 0;
  if (key.hashed === true && key.length === 4) return ((v.getUint32(record + key.offset, true) & 0xffff) * n) >>> 16;
  return partition(v, record + key.offset, key.length, n);
}
