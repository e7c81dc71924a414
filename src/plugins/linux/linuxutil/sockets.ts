/**
 * Pure parser for the socket tables /proc/net/{tcp,tcp6,udp,udp6}:
 *   `  sl  local_address rem_address   st tx_queue …` then one socket per line,
 *   `   0: 0100007F:0277 00000000:0000 0A 00000000:00000000 …` (addresses in hex, IPv6 as 32 digits).
 * Only the state and whether the remote end is set are needed, so a line is checked and counted,
 * never kept: tables with 100 000 sockets stay cheap.
 */
import { quote, type Parsed } from './counters.js';
import { Issues, lines } from './issues.js';

/** TCP state names as go-netstat (Retina) spells them, indexed by the kernel's st value. */
export const TCP_STATES = [
  '', 'ESTABLISHED', 'SYN_SENT', 'SYN_RECV', 'FIN_WAIT1', 'FIN_WAIT2', 'TIME_WAIT', 'CLOSE', 'CLOSE_WAIT', 'LAST_ACK', 'LISTEN', 'CLOSING',
] as const;
export type TcpStateName = Exclude<(typeof TCP_STATES)[number], ''>;

export interface SocketCounts {
  /** Sockets by kernel state number (1..11); index 0 is unused. */
  readonly byState: readonly number[];
  /** All sockets in the table. */
  readonly total: number;
  /** Sockets whose remote address and port are set (not 0.0.0.0:0 / [::]:0): not listeners. */
  readonly withRemote: number;
}

const ADDR = '(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):[0-9A-Fa-f]{4}';
/** `  12: <local> <remote> <st> …`: captures local, remote and the state's two hex digits. */
const LINE = new RegExp(`^\\s*\\d+:\\s+(${ADDR})\\s+(${ADDR})\\s+([0-9A-Fa-f]{2})(?:\\s|$)`);
const UNSPECIFIED = /^0+:0000$/;

export function emptyCounts(): SocketCounts {
  return { byState: new Array<number>(TCP_STATES.length).fill(0), total: 0, withRemote: 0 };
}

/** Counts the sockets of one table; lines that do not parse are skipped and reported. */
export function parseSocketTable(text: string, file: string): Parsed<SocketCounts> {
  const issues = new Issues(file);
  const byState = new Array<number>(TCP_STATES.length).fill(0);
  let total = 0;
  let withRemote = 0;
  const ls = lines(text);
  if (ls.length === 0) issues.add(0, 'empty file (expected a header line)');
  else if (!/^\s*sl\s+local_address\s/.test(ls[0] as string)) issues.add(1, `expected the "sl local_address …" header, got ${quote(ls[0] as string)}`);
  for (let i = 1; i < ls.length; i++) {
    const line = ls[i] as string;
    const m = LINE.exec(line);
    if (!m) {
      if (line.trim() !== '') issues.add(i + 1, `not a socket line: ${quote(line)}`);
      continue;
    }
    const state = parseInt(m[3] as string, 16);
    if (state < 1 || state >= TCP_STATES.length) {
      issues.add(i + 1, `unknown socket state 0x${m[3] as string}`);
      continue;
    }
    byState[state] = (byState[state] as number) + 1;
    total++;
    if (!UNSPECIFIED.test(m[2] as string)) withRemote++;
  }
  return { value: { byState, total, withRemote }, issues: issues.list() };
}

/** Adds socket counts (IPv4 + IPv6). */
export function addCounts(a: SocketCounts, b: SocketCounts): SocketCounts {
  return {
    byState: a.byState.map((n, i) => n + (b.byState[i] ?? 0)),
    total: a.total + b.total,
    withRemote: a.withRemote + b.withRemote,
  };
}
