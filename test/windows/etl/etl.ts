/**
 * A small reader of ETW log files (.etl), for tests: real PktMon captures kept under
 * test/fixtures/windows/real/ are read here into the same event records the ETW consumer hands the
 * pktmon plugin (src/ffi/windows: id, version, timestamp FILETIME, user data).
 *
 * Layout (as documented by the public ETL readers, e.g. snail-tools' etl_file.cpp and the
 * WMI_BUFFER_HEADER / EVENT_HEADER of ntwmi.h / evntcons.h):
 * - the file is a run of buffers, each a 72-byte WMI_BUFFER_HEADER (BufferSize u32 @0 = the bytes
 *   the buffer takes in the file, SavedOffset u32 @4 = where its events end once decompressed,
 *   State u32 @44, BufferFlag u16 @52 with 0x40 = compressed, BufferType u16 @54), then events;
 * - the first buffer holds the logger's header event (a system trace header, then
 *   TRACE_LOGFILE_HEADER): its LogFileMode with EVENT_TRACE_COMPRESSED_MODE (0x04000000) says the
 *   later buffers are compressed, in the format in the low 16 bits of the first buffer's State
 *   (COMPRESSION_FORMAT_XPRESS = 3, plain LZ77 of MS-XCA 2.3; the only one PktMon has been seen to write);
 * - each event starts with a trace marker: byte 2 its header type, byte 3 flags (0xC0); its size
 *   is the u16 at 4 for system/compact/perfinfo headers, at 0 for the others; events are 8-aligned;
 * - an EVENT_HEADER event (types 18/19, the manifest providers such as PktMon): Size u16 @0,
 *   Flags u16 @4, TimeStamp i64 @16, ProviderId GUID @24, EventDescriptor @40 (Id u16, Version u8),
 *   80 bytes, then (flag 0x01) extended items, then the user data.
 * Timestamps: with ReservedFlags (ClockType) 1 the stamps are QPC ticks, turned into FILETIME with
 * the header's StartTime, the header event's own stamp and PerfFreq; with 2 they are FILETIME.
 */
import type { EtwEvent } from '../../../src/ffi/windows/index.js';

export const WMI_BUFFER_HEADER = 72;
const BUFFER_FLAG_COMPRESSED = 0x40;
const COMPRESSED_MODE = 0x0400_0000;
const FORMAT_XPRESS = 3;

export interface EtlEvent extends EtwEvent {
  /** The provider GUID, lower case, no braces. */
  readonly provider: string;
}

export interface EtlFile {
  readonly events: EtlEvent[];
  readonly buffers: number;
  readonly compressedBuffers: number;
  /** Events the header says were lost while logging. */
  readonly eventsLost: number;
  /** Events with extended data items (skipped over to reach the user data). */
  readonly extended: number;
}

/** MS-XCA 2.4, plain LZ77 (COMPRESSION_FORMAT_XPRESS): `input` into exactly `outSize` bytes. */
export function xpressDecompress(input: Uint8Array, outSize: number): Uint8Array {
  const out = new Uint8Array(outSize);
  let ip = 0;
  let op = 0;
  let flags = 0;
  let flagCount = 0;
  let halfByte = 0;
  const u16 = (): number => { const v = input[ip]! | (input[ip + 1]! << 8); ip += 2; return v; };
  while (ip < input.length && op < outSize) {
    if (flagCount === 0) {
      if (ip + 4 > input.length) break;
      flags = (input[ip]! | (input[ip + 1]! << 8) | (input[ip + 2]! << 16) | (input[ip + 3]! << 24)) >>> 0;
      ip += 4;
      flagCount = 32;
    }
    flagCount--;
    if ((flags & (1 << flagCount)) === 0) {
      if (ip >= input.length) break;
      out[op++] = input[ip++]!;
      continue;
    }
    if (ip + 2 > input.length) break;
    const match = u16();
    let length = match & 7;
    const offset = (match >>> 3) + 1;
    if (length === 7) {
      if (halfByte === 0) {
        length = input[ip]! & 15;
        halfByte = ip++;
      } else {
        length = input[halfByte]! >>> 4;
        halfByte = 0;
      }
      if (length === 15) {
        length = input[ip++]!;
        if (length === 255) {
          length = u16();
          if (length === 0) { length = (input[ip]! | (input[ip + 1]! << 8) | (input[ip + 2]! << 16) | (input[ip + 3]! << 24)) >>> 0; ip += 4; }
          if (length < 22) throw new Error(`xpress: match length ${length} below 22 at input ${ip}`);
          length -= 22;
        }
        length += 15;
      }
      length += 7;
    }
    length += 3;
    if (offset > op) throw new Error(`xpress: match offset ${offset} before the start of the output (at ${op})`);
    for (let i = 0; i < length && op < outSize; i++, op++) out[op] = out[op - offset]!;
  }
  if (op !== outSize) throw new Error(`xpress: ${op} bytes decompressed, the buffer says ${outSize}`);
  return out;
}

const guidAt = (b: Buffer, o: number): string => {
  const h = (s: number, n: number): string => b.subarray(s, s + n).toString('hex');
  return `${b.readUInt32LE(o).toString(16).padStart(8, '0')}-${b.readUInt16LE(o + 4).toString(16).padStart(4, '0')}-${b.readUInt16LE(o + 6).toString(16).padStart(4, '0')}-${h(o + 8, 2)}-${h(o + 10, 6)}`;
};

interface Clock { qpc: boolean; startFt: bigint; startQpc: bigint; freq: bigint }

/** The events of one buffer's payload (`p`, from its first event to SavedOffset). */
function readEvents(p: Buffer, clock: Clock, out: EtlEvent[]): number {
  let extended = 0;
  let o = 0;
  while (o + 8 <= p.length) {
    if (p.readUInt32LE(o) === 0xffff_ffff) break; // filler
    const type = p[o + 2]!;
    const sizeAt4 = type <= 4 || type === 16 || type === 17;
    const size = sizeAt4 ? p.readUInt16LE(o + 4) : p.readUInt16LE(o);
    if (size === 0) break;
    if (type === 18 || type === 19) {
      const flags = p.readUInt16LE(o + 4);
      let data = o + 80;
      if (flags & 0x01) {
        // Extended items: { Reserved1 u16, ExtType u16, Linkage/Reserved2 u16, DataSize u16 } + data, 8-aligned, while Linkage bit 0 says another follows.
        extended++;
        for (;;) {
          const len = p.readUInt16LE(data + 6);
          const more = p.readUInt16LE(data + 4) & 1;
          data += 8 + ((len + 7) & ~7);
          if (!more) break;
        }
      }
      const ts = p.readBigInt64LE(o + 16);
      const timestamp = clock.qpc ? clock.startFt + ((ts - clock.startQpc) * 10_000_000n) / clock.freq : ts;
      out.push({
        id: p.readUInt16LE(o + 40), version: p[o + 42]!, timestamp, provider: guidAt(p, o + 24),
        data: Buffer.from(p.subarray(data, o + size)),
      });
    }
    o += (size + 7) & ~7;
  }
  return extended;
}

/** Reads a whole .etl file. Throws naming the buffer and field when the layout does not hold. */
export function readEtl(file: Buffer): EtlFile {
  if (file.length < WMI_BUFFER_HEADER + 48) throw new Error(`etl: ${file.length} bytes, too short for the header buffer`);
  const firstSize = file.readUInt32LE(0);
  // The header buffer: WMI_BUFFER_HEADER, a system trace header (Version u16, Type u8, Marker u8, Size u16, HookId u16, ThreadId, ProcessId, SystemTime i64, KernelTime, UserTime: 32 bytes), then TRACE_LOGFILE_HEADER.
  const h = WMI_BUFFER_HEADER + 32;
  const headerQpc = file.readBigInt64LE(WMI_BUFFER_HEADER + 16);
  // TRACE_LOGFILE_HEADER (64-bit pointers): BufferSize @0, Version @4, ProviderVersion @8, NumberOfProcessors @12, EndTime @16, TimerResolution @24, MaximumFileSize @28, LogFileMode @32, BuffersWritten @36, StartBuffers @40, PointerSize @44, EventsLost @48, CpuSpeedInMHz @52, LoggerName ptr @56, LogFileName ptr @64, TimeZone (172) @72, BootTime @248, PerfFreq @256, StartTime @264, ReservedFlags @272, BuffersLost @276.
  const logFileMode = file.readUInt32LE(h + 32);
  const pointerSize = file.readUInt32LE(h + 44);
  if (pointerSize !== 8) throw new Error(`etl: PointerSize ${pointerSize} (only 64-bit logs are read)`);
  const clock: Clock = {
    freq: file.readBigInt64LE(h + 256), startFt: file.readBigInt64LE(h + 264),
    qpc: file.readUInt32LE(h + 272) === 1, startQpc: headerQpc,
  };
  const compression = (logFileMode & COMPRESSED_MODE) ? file.readUInt32LE(44) & 0xffff : 0;
  if (compression && compression !== FORMAT_XPRESS) throw new Error(`etl: compression format ${compression} (only XPRESS, 3, is read)`);
  const events: EtlEvent[] = [];
  let buffers = 0;
  let compressedBuffers = 0;
  let extended = 0;
  for (let at = 0; at + WMI_BUFFER_HEADER <= file.length;) {
    const size = file.readUInt32LE(at);
    const saved = file.readUInt32LE(at + 4);
    const flag = file.readUInt16LE(at + 52);
    if (size < WMI_BUFFER_HEADER || at + size > file.length) throw new Error(`etl: buffer at ${at}: BufferSize ${size} runs past the file (${file.length} bytes)`);
    const body = file.subarray(at + WMI_BUFFER_HEADER, at + size);
    let payload: Buffer;
    if (flag & BUFFER_FLAG_COMPRESSED) {
      compressedBuffers++;
      const raw = xpressDecompress(body, saved - WMI_BUFFER_HEADER);
      payload = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength);
    } else {
      payload = body.subarray(0, Math.max(0, Math.min(saved, size) - WMI_BUFFER_HEADER));
    }
    // The header buffer's first event is the logger header (a system trace), read like the others.
    extended += readEvents(payload, clock, events);
    buffers++;
    at += at === 0 ? firstSize : size;
  }
  // Buffers are per processor: order the events by time (stable, so one processor's order stands).
  events.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0));
  return { events, buffers, compressedBuffers, eventsLost: file.readUInt32LE(h + 48), extended };
}
