/**
 * Counts the packets of a capture file, classic pcap (either byte order, µs or ns) or pcapng
 * (enhanced, simple and obsolete packet blocks), reading it in chunks: what the manifest says when
 * the capture tool does not (pktmon's etl2pcap). A truncated last record is not counted.
 */
import { open } from 'node:fs/promises';

const CHUNK = 1 << 20;

export async function countPackets(path: string): Promise<number> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    const read = async (pos: number, len: number): Promise<Buffer> => {
      const b = Buffer.alloc(len);
      const { bytesRead } = await fh.read(b, 0, len, pos);
      return b.subarray(0, bytesRead);
    };
    const head = await read(0, 24);
    if (head.length < 4) return 0;
    const magic = head.readUInt32LE(0);
    if (magic === 0x0a0d0d0a) return await countPcapng(read, size);
    let le: boolean;
    if (magic === 0xa1b2c3d4 || magic === 0xa1b23c4d) le = true;
    else if (magic === 0xd4c3b2a1 || magic === 0x4d3cb2a1) le = false;
    else throw new Error(`${path}: not a pcap or pcapng file (magic 0x${magic.toString(16)})`);
    let n = 0;
    let pos = 24;
    let buf: Buffer = Buffer.alloc(0);
    let bufAt = pos;
    while (pos + 16 <= size) {
      if (pos + 16 > bufAt + buf.length) {
        buf = await read(pos, CHUNK);
        bufAt = pos;
      }
      const off = pos - bufAt;
      const incl = le ? buf.readUInt32LE(off + 8) : buf.readUInt32BE(off + 8);
      if (pos + 16 + incl > size) break;
      n++;
      pos += 16 + incl;
    }
    return n;
  } finally {
    await fh.close();
  }
}

async function countPcapng(read: (pos: number, len: number) => Promise<Buffer>, size: number): Promise<number> {
  let n = 0;
  let pos = 0;
  let le = true;
  while (pos + 12 <= size) {
    const h = await read(pos, 12);
    const rawType = h.readUInt32LE(0);
    if (rawType === 0x0a0d0d0a) le = h.readUInt32LE(8) === 0x1a2b3c4d;
    const type = le ? h.readUInt32LE(0) : h.readUInt32BE(0);
    const len = le ? h.readUInt32LE(4) : h.readUInt32BE(4);
    if (len < 12 || pos + len > size) break;
    if (type === 6 || type === 3 || type === 2) n++;
    pos += len;
  }
  return n;
}
