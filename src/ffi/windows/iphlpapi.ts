/**
 * iphlpapi.dll: interface table (GetIfTable2/FreeMibTable), TCP/UDP/IP statistics per address family
 * (GetTcpStatisticsEx2 where the OS has it, else GetTcpStatisticsEx) and TCP connection states
 * (GetTcpTable2/GetTcp6Table2). Every Win32 error becomes a WindowsCallError naming the call.
 */
import koffi from '../koffi.js';
import { checkWin32, win32 } from './errors.js';
import { iphlpTypes, IF_COUNTERS, TABLE_ROWS } from './iphlpapi-types.js';
import { loadDll } from './libraries.js';

export const AF_INET = 2;
export const AF_INET6 = 23;

export interface IfRow {
  readonly index: number;
  readonly alias: string;
  readonly description: string;
  readonly operStatus: number;
  /** IFTYPE (24: software loopback). */
  readonly type: number;
  /** InterfaceAndOperStatusFlags (bit 1: a filter interface stacked on another). */
  readonly flags: number;
  /** PhysicalAddress as `00-15-5D-00-00-01` ('' when the interface has none). */
  readonly mac: string;
  readonly mtu: number;
  /** TransmitLinkSpeed / ReceiveLinkSpeed in bits per second. */
  readonly transmitBps: number;
  readonly receiveBps: number;
  /** IF_COUNTERS by name (u64 as number; exact below 2^53). */
  readonly counters: Readonly<Record<string, number>>;
}

/** Field name → value (u32 fields; the 64-bit TCP segment counters of MIB_TCPSTATS2 folded in). */
export type StatsRecord = Readonly<Record<string, number>>;

export interface TcpStats {
  readonly stats: StatsRecord;
  /** Which call answered: GetTcpStatisticsEx2 (64-bit segment counters) or the 32-bit fallback. */
  readonly call: 'GetTcpStatisticsEx2' | 'GetTcpStatisticsEx';
}

export interface Iphlpapi {
  interfaces(): IfRow[];
  tcpStats(family: number): TcpStats;
  udpStats(family: number): StatsRecord;
  ipStats(family: number): StatsRecord;
  /** Count of connections by MIB_TCP_STATE number (1..12), IPv4 and IPv6 together. */
  tcpStates(): number[];
}

type Fn = (...args: unknown[]) => number;

const num = (v: unknown): number => (typeof v === 'bigint' ? Number(v) : (v as number));

/** Loads iphlpapi.dll and binds its calls; GetTcpStatisticsEx2 is optional (Wine and old builds lack it). */
export function openIphlpapi(): Iphlpapi {
  const lib = loadDll('iphlpapi');
  const t = iphlpTypes();
  const getIfTable2 = lib.func('uint32_t __stdcall GetIfTable2(_Out_ void **table)') as Fn;
  const freeMibTable = lib.func('void __stdcall FreeMibTable(void *table)') as (p: unknown) => void;
  const tcpEx = lib.func('uint32_t __stdcall GetTcpStatisticsEx(_Out_ MIB_TCPSTATS *stats, uint32_t family)') as Fn;
  let tcpEx2: Fn | undefined;
  try {
    tcpEx2 = lib.func('uint32_t __stdcall GetTcpStatisticsEx2(_Out_ MIB_TCPSTATS2 *stats, uint32_t family)') as Fn;
  } catch {
    tcpEx2 = undefined;
  }
  const udpEx = lib.func('uint32_t __stdcall GetUdpStatisticsEx(_Out_ MIB_UDPSTATS *stats, uint32_t family)') as Fn;
  const ipEx = lib.func('uint32_t __stdcall GetIpStatisticsEx(_Out_ MIB_IPSTATS *stats, uint32_t family)') as Fn;
  const tcpTable2 = lib.func('uint32_t __stdcall GetTcpTable2(void *table, _Inout_ uint32_t *size, int32_t order)') as Fn;
  const tcp6Table2 = lib.func('uint32_t __stdcall GetTcp6Table2(void *table, _Inout_ uint32_t *size, int32_t order)') as Fn;
  const rowSize = koffi.sizeof(t.MIB_IF_ROW2);

  const statsCall = (call: string, fn: Fn, family: number): StatsRecord => {
    const out: Record<string, unknown> = {};
    checkWin32(`${call}(family ${family})`, fn(out, family));
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, num(v)]));
  };

  const table = (call: 'GetTcpTable2' | 'GetTcp6Table2', fn: Fn, rowType: koffi.IKoffiCType, state: (row: Record<string, unknown>) => number, counts: number[]): void => {
    let bytes = 16 << 10;
    for (let attempt = 0; attempt < 8; attempt++) {
      const buf = Buffer.alloc(bytes);
      const size = [bytes];
      const rc = fn(buf, size, 0);
      if (rc === win32.ERROR_INSUFFICIENT_BUFFER) {
        // The size the call asks for, with room for connections opened meanwhile; at least double.
        bytes = Math.max(bytes * 2, Math.ceil(((size[0] as number) * 5) / 4));
        continue;
      }
      checkWin32(call, rc);
      const n = buf.readUInt32LE(0);
      const stride = koffi.sizeof(rowType);
      const first = TABLE_ROWS[call === 'GetTcpTable2' ? 'MIB_TCPTABLE2' : 'MIB_TCP6TABLE2'];
      for (let i = 0; i < n; i++) {
        const row = koffi.decode(buf.subarray(first + i * stride, first + (i + 1) * stride), rowType) as Record<string, unknown>;
        const s = state(row);
        counts[s] = (counts[s] ?? 0) + 1;
      }
      return;
    }
    throw new Error(`${call}: the table kept growing (ERROR_INSUFFICIENT_BUFFER eight times, last asked ${bytes} bytes)`);
  };

  return {
    interfaces() {
      const slot: [unknown] = [null];
      checkWin32('GetIfTable2', getIfTable2(slot));
      const ptr = slot[0];
      try {
        const n = koffi.decode(ptr, 'uint32_t') as number;
        const rows: IfRow[] = [];
        for (let i = 0; i < n; i++) {
          const r = koffi.decode(ptr, TABLE_ROWS.MIB_IF_TABLE2 + i * rowSize, t.MIB_IF_ROW2) as Record<string, unknown>;
          const counters: Record<string, number> = {};
          for (const c of IF_COUNTERS) counters[c] = num(r[c]);
          const macBytes = Array.from(r['PhysicalAddress'] as ArrayLike<number>).slice(0, r['PhysicalAddressLength'] as number);
          rows.push({
            index: r['InterfaceIndex'] as number, alias: r['Alias'] as string, description: r['Description'] as string, operStatus: r['OperStatus'] as number,
            type: r['Type'] as number, flags: r['InterfaceAndOperStatusFlags'] as number, counters,
            mac: macBytes.map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join('-'), mtu: r['Mtu'] as number,
            transmitBps: num(r['TransmitLinkSpeed']), receiveBps: num(r['ReceiveLinkSpeed']),
          });
        }
        return rows;
      } finally {
        freeMibTable(ptr);
      }
    },
    tcpStats(family) {
      if (tcpEx2) {
        const s = statsCall('GetTcpStatisticsEx2', tcpEx2, family);
        const { dw64InSegs, dw64OutSegs, ...rest } = s;
        return { call: 'GetTcpStatisticsEx2', stats: { ...rest, dwInSegs: dw64InSegs ?? 0, dwOutSegs: dw64OutSegs ?? 0 } };
      }
      return { call: 'GetTcpStatisticsEx', stats: statsCall('GetTcpStatisticsEx', tcpEx, family) };
    },
    udpStats: (family) => statsCall('GetUdpStatisticsEx', udpEx, family),
    ipStats: (family) => statsCall('GetIpStatisticsEx', ipEx, family),
    tcpStates() {
      const counts = new Array<number>(13).fill(0);
      table('GetTcpTable2', tcpTable2, t.MIB_TCPROW2, (r) => r['dwState'] as number, counts);
      table('GetTcp6Table2', tcp6Table2, t.MIB_TCP6ROW2, (r) => r['State'] as number, counts);
      return counts;
    },
  };
}
