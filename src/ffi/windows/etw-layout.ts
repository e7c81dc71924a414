/**
 * x64 layouts of the ETW structs the bindings fill by hand (EVENT_TRACE_PROPERTIES with the session
 * name after it, ENABLE_TRACE_PARAMETERS, EVENT_TRACE_LOGFILEW) and read in the event callback
 * (EVENT_RECORD, EVENT_HEADER). Plain offsets over Buffers rather than koffi structs: these structs
 * carry unions and nested headers the code never reads, and an EVENT_RECORD is read once per
 * packet. Checked against a mingw `offsetof` dump (test/windows/layout).
 */
import { parseGuid } from './guid.js';

/** "STRUCT.Field" → offset, "STRUCT" → size; every entry is compared with mingw-w64's headers. */
export const ETW_LAYOUT = Object.freeze({
  'WNODE_HEADER': 48,
  'WNODE_HEADER.BufferSize': 0,
  'WNODE_HEADER.Guid': 24,
  'WNODE_HEADER.ClientContext': 40,
  'WNODE_HEADER.Flags': 44,
  'EVENT_TRACE_PROPERTIES': 120,
  'EVENT_TRACE_PROPERTIES.BufferSize': 48,
  'EVENT_TRACE_PROPERTIES.MinimumBuffers': 52,
  'EVENT_TRACE_PROPERTIES.MaximumBuffers': 56,
  'EVENT_TRACE_PROPERTIES.LogFileMode': 64,
  'EVENT_TRACE_PROPERTIES.FlushTimer': 68,
  'EVENT_TRACE_PROPERTIES.EventsLost': 88,
  'EVENT_TRACE_PROPERTIES.LogBuffersLost': 96,
  'EVENT_TRACE_PROPERTIES.RealTimeBuffersLost': 100,
  'EVENT_TRACE_PROPERTIES.LogFileNameOffset': 112,
  'EVENT_TRACE_PROPERTIES.LoggerNameOffset': 116,
  'ENABLE_TRACE_PARAMETERS': 48,
  'ENABLE_TRACE_PARAMETERS.Version': 0,
  'ENABLE_TRACE_PARAMETERS.EnableFilterDesc': 32,
  'ENABLE_TRACE_PARAMETERS.FilterDescCount': 40,
  'EVENT_HEADER': 80,
  'EVENT_HEADER.Flags': 4,
  'EVENT_HEADER.TimeStamp': 16,
  'EVENT_HEADER.ProviderId': 24,
  'EVENT_HEADER.EventDescriptor': 40,
  'EVENT_RECORD': 112,
  'EVENT_RECORD.UserDataLength': 86,
  'EVENT_RECORD.UserData': 96,
  'EVENT_TRACE_LOGFILEW': 448,
  'EVENT_TRACE_LOGFILEW.LoggerName': 8,
  'EVENT_TRACE_LOGFILEW.ProcessTraceMode': 28,
  'EVENT_TRACE_LOGFILEW.EventsLost': 416,
  'EVENT_TRACE_LOGFILEW.EventRecordCallback': 424,
  'EVENT_TRACE_LOGFILEW.Context': 440,
});

const at = (key: keyof typeof ETW_LAYOUT): number => ETW_LAYOUT[key];

export const WNODE_FLAG_TRACED_GUID = 0x0002_0000;
export const EVENT_TRACE_REAL_TIME_MODE = 0x100;
export const PROCESS_TRACE_MODE_REAL_TIME = 0x100;
export const PROCESS_TRACE_MODE_EVENT_RECORD = 0x1000_0000;
/** Room for the session name after EVENT_TRACE_PROPERTIES (the API writes the name back on QUERY). */
const NAME_ROOM = 1024 * 2;

/** Writes a GUID struct (Data1..3 little-endian) at `off`. */
export function writeGuid(buf: Buffer, off: number, text: string): void {
  const g = parseGuid(text);
  buf.writeUInt32LE(g.Data1, off);
  buf.writeUInt16LE(g.Data2, off + 4);
  buf.writeUInt16LE(g.Data3, off + 6);
  Buffer.from(g.Data4).copy(buf, off + 8);
}

/** An EVENT_TRACE_PROPERTIES for a real-time session named `name` (system-time stamps), name space after it. */
export function traceProperties(name: string, buffersKb = 64, maxBuffers = 64): Buffer {
  const size = at('EVENT_TRACE_PROPERTIES') + NAME_ROOM;
  const buf = Buffer.alloc(size);
  buf.writeUInt32LE(size, at('WNODE_HEADER.BufferSize'));
  buf.writeUInt32LE(2, at('WNODE_HEADER.ClientContext'));
  buf.writeUInt32LE(WNODE_FLAG_TRACED_GUID, at('WNODE_HEADER.Flags'));
  buf.writeUInt32LE(buffersKb, at('EVENT_TRACE_PROPERTIES.BufferSize'));
  buf.writeUInt32LE(maxBuffers, at('EVENT_TRACE_PROPERTIES.MaximumBuffers'));
  buf.writeUInt32LE(EVENT_TRACE_REAL_TIME_MODE, at('EVENT_TRACE_PROPERTIES.LogFileMode'));
  buf.writeUInt32LE(1, at('EVENT_TRACE_PROPERTIES.FlushTimer'));
  buf.writeUInt32LE(at('EVENT_TRACE_PROPERTIES'), at('EVENT_TRACE_PROPERTIES.LoggerNameOffset'));
  return buf;
}

/** The loss counters a QUERY returns. */
export interface SessionLosses {
  readonly eventsLost: number;
  readonly realTimeBuffersLost: number;
  readonly logBuffersLost: number;
}

export function readLosses(props: Buffer): SessionLosses {
  return {
    eventsLost: props.readUInt32LE(at('EVENT_TRACE_PROPERTIES.EventsLost')),
    realTimeBuffersLost: props.readUInt32LE(at('EVENT_TRACE_PROPERTIES.RealTimeBuffersLost')),
    logBuffersLost: props.readUInt32LE(at('EVENT_TRACE_PROPERTIES.LogBuffersLost')),
  };
}

/** ENABLE_TRACE_PARAMETERS version 2, no filters. */
export function enableParameters(): Buffer {
  const buf = Buffer.alloc(at('ENABLE_TRACE_PARAMETERS'));
  buf.writeUInt32LE(2, at('ENABLE_TRACE_PARAMETERS.Version'));
  return buf;
}

/** An EVENT_TRACE_LOGFILEW for a real-time EVENT_RECORD consumer; `loggerName` and `callback` are addresses. */
export function logfile(loggerName: bigint, callback: bigint): Buffer {
  const buf = Buffer.alloc(at('EVENT_TRACE_LOGFILEW'));
  buf.writeBigUInt64LE(loggerName, at('EVENT_TRACE_LOGFILEW.LoggerName'));
  buf.writeUInt32LE((PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD) >>> 0, at('EVENT_TRACE_LOGFILEW.ProcessTraceMode'));
  buf.writeBigUInt64LE(callback, at('EVENT_TRACE_LOGFILEW.EventRecordCallback'));
  return buf;
}

/** The part of an EVENT_RECORD a consumer keeps: which event, when, and a copy of its user data. */
export interface EtwEvent {
  readonly id: number;
  readonly version: number;
  /** FILETIME (100 ns since 1601) or QPC ticks, as the session's ClientContext says. */
  readonly timestamp: bigint;
  readonly data: Buffer;
}

/** Event id, version and time from the first 112 bytes of an EVENT_RECORD. */
export function readEventHeader(rec: Buffer): { id: number; version: number; timestamp: bigint; userDataLength: number; userData: bigint } {
  const d = at('EVENT_HEADER.EventDescriptor');
  return {
    id: rec.readUInt16LE(d),
    version: rec.readUInt8(d + 2),
    timestamp: rec.readBigInt64LE(at('EVENT_HEADER.TimeStamp')),
    userDataLength: rec.readUInt16LE(at('EVENT_RECORD.UserDataLength')),
    userData: rec.readBigUInt64LE(at('EVENT_RECORD.UserData')),
  };
}
