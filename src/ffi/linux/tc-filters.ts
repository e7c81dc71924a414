/**
 * What sits on a clsact qdisc: an rtnetlink filter dump (RTM_GETTFILTER) of one interface's ingress
 * or egress parent, with each BPF filter's program id (TCA_BPF_ID), the id and name of a program
 * (BPF_OBJ_GET_INFO_BY_FD), and detaching one filter. tc.ts and tc-leftovers.ts use these to remove
 * only filters of ours, never a filter or qdisc another program put there. The parser is pure
 * (tested on bytes); a socket is opened per dump (rtnetlink.ts), never at import time.
 */
import { errnoName } from './libc.js';
import { errnoText, loadLibbpf } from './libbpf.js';
import { NLMSG_HDRLEN, attrEnd, attrLength, attrType, cString, dumpRequest, openRouteSocket, walkDump } from './rtnetlink.js';
import { loadSys } from './sys.js';

export type TcParent = 'ingress' | 'egress';

export interface TcFilter {
  readonly direction: TcParent;
  /** TCA_KIND: 'bpf', 'matchall', 'u32', ... */
  readonly kind: string;
  /** 0 for the message that only announces a priority (no filter of its own). */
  readonly handle: number;
  readonly priority: number;
  /** The protocol in network order, as tcm_info carries it (ETH_P_ALL: 0x0300). */
  readonly protocol: number;
  readonly chain: number;
  /** TCA_BPF_ID: the eBPF program of a `bpf` filter; undefined for classic BPF and other kinds. */
  readonly progId: number | undefined;
  /** TCA_BPF_NAME: what the attacher called it (libbpf: "<program>:[<id>]", tc: "<file>:[<section>]"). */
  readonly bpfName: string | undefined;
}

const RTM_NEWTFILTER = 44;
const RTM_GETTFILTER = 46;
const TCMSG_LEN = 20;
const TCA_KIND = 1;
const TCA_OPTIONS = 2;
const TCA_CHAIN = 11;
const TCA_BPF_NAME = 7;
const TCA_BPF_ID = 11;
/** TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS / TC_H_MIN_EGRESS). */
const CLSACT_PARENT: Record<TcParent, number> = { ingress: 0xfffffff2, egress: 0xfffffff3 };

/**
 * Parses the messages in `v[0, len)` of the filter dump with sequence number `seq` into `out`.
 * Returns true when the dump is complete (NLMSG_DONE); throws on NLMSG_ERROR and on a truncated message.
 */
export function parseFilterMessages(v: DataView, len: number, seq: number, direction: TcParent, out: TcFilter[]): boolean {
  return walkDump(v, len, seq, 'RTM_GETTFILTER', (type, m, mlen) => {
    if (type !== RTM_NEWTFILTER || mlen < NLMSG_HDRLEN + TCMSG_LEN) return;
    const t = m + NLMSG_HDRLEN;
    const info = v.getUint32(t + 16, true);
    let kind = '';
    let chain = 0;
    let progId: number | undefined;
    let bpfName: string | undefined;
    for (let a = t + TCMSG_LEN, next; (next = attrEnd(v, a, m + mlen)) > 0; a = next) {
      const atype = attrType(v, a);
      const alen = attrLength(v, a);
      if (atype === TCA_KIND) kind = cString(v, a + 4, alen);
      else if (atype === TCA_CHAIN && alen >= 4) chain = v.getUint32(a + 4, true);
      else if (atype === TCA_OPTIONS) {
        for (let o = a + 4, onext; (onext = attrEnd(v, o, a + 4 + alen)) > 0; o = onext) {
          const otype = attrType(v, o);
          if (otype === TCA_BPF_ID && attrLength(v, o) >= 4) progId = v.getUint32(o + 4, true);
          else if (otype === TCA_BPF_NAME) bpfName = cString(v, o + 4, attrLength(v, o));
        }
      }
    }
    const bpf = kind === 'bpf';
    out.push({
      direction, kind, handle: v.getUint32(t + 8, true), priority: info >>> 16, protocol: info & 0xffff, chain,
      progId: bpf ? progId : undefined, bpfName: bpf ? bpfName : undefined,
    });
  });
}

/** The request: nlmsghdr + tcmsg (ifindex, the clsact parent of `direction`), 36 bytes. */
export function filterDumpRequest(seq: number, ifindex: number, direction: TcParent): Uint8Array {
  const { bytes, view } = dumpRequest(RTM_GETTFILTER, seq, TCMSG_LEN);
  view.setInt32(NLMSG_HDRLEN + 4, ifindex, true);
  view.setUint32(NLMSG_HDRLEN + 12, CLSACT_PARENT[direction], true);
  return bytes;
}

/** A clsact parent holds a few filters: one small buffer (allocating 64 KiB per dump cost more than the dump). */
const FILTER_DUMP_BUFFER = 16 * 1024;

/**
 * Every tc filter on the clsact `direction` of `ifindex` now (none when the interface has no clsact
 * qdisc or is gone). One NETLINK_ROUTE socket per call, closed before it returns; throws when the
 * kernel refuses or the socket fails.
 */
export function listTcFilters(ifindex: number, direction: TcParent): TcFilter[] {
  const out: TcFilter[] = [];
  const socket = openRouteSocket(FILTER_DUMP_BUFFER);
  try {
    socket.dump(filterDumpRequest(1, ifindex, direction), (v, n) => parseFilterMessages(v, n, 1, direction, out));
  } finally {
    socket[Symbol.dispose]();
  }
  return out;
}

/** struct bpf_prog_info: id at 4, name[16] at 64; the buffer is larger than any kernel's struct needs here. */
const PROG_INFO_SIZE = 256;

/** The id and kernel name (at most 15 characters) of the BPF program behind `fd`; throws when the kernel refuses. */
export function progIdentity(fd: number): { id: number; name: string } {
  const info = Buffer.alloc(PROG_INFO_SIZE);
  const len = [PROG_INFO_SIZE];
  const rc = loadLibbpf().objGetInfo(fd, info, len) as number;
  if (rc < 0) throw new Error(`BPF_OBJ_GET_INFO_BY_FD failed: ${errnoName(-rc)}`);
  const v = new DataView(info.buffer, info.byteOffset, info.length);
  return { id: info.readUInt32LE(4), name: cString(v, 64, 16) };
}

/** The name of loaded BPF program `id`, or undefined when it is gone or cannot be opened. */
export function progNameById(id: number): string | undefined {
  const fd = loadLibbpf().progFdById(id) as number;
  if (fd < 0) return undefined;
  try {
    return progIdentity(fd).name;
  } catch {
    return undefined;
  } finally {
    loadSys().close(fd);
  }
}

const BPF_TC_INGRESS = 1;
const BPF_TC_EGRESS = 2;
const TC_HOOK_SIZE = 24;
export const TC_OPTS_SIZE = 32;

/** libbpf's struct bpf_tc_hook for clsact `at` of `ifindex` ('both': the qdisc itself). */
export function tcHook(ifindex: number, at: TcParent | 'both'): { sz: number; ifindex: number; attach_point: number; parent: number } {
  const point = at === 'ingress' ? BPF_TC_INGRESS : at === 'egress' ? BPF_TC_EGRESS : BPF_TC_INGRESS | BPF_TC_EGRESS;
  return { sz: TC_HOOK_SIZE, ifindex, attach_point: point, parent: 0 };
}

/**
 * Removes the bpf filter (protocol ETH_P_ALL, chain 0, as libbpf attaches them) with `handle` and
 * `priority` from clsact `direction` of `ifindex`. Already gone (ENOENT, ENODEV) is not an error;
 * `what` names it in the error otherwise.
 */
export function detachTcFilter(ifindex: number, direction: TcParent, handle: number, priority: number, what: string): void {
  const d = loadLibbpf().tcDetach(tcHook(ifindex, direction), { sz: TC_OPTS_SIZE, prog_fd: 0, flags: 0, prog_id: 0, handle, priority }) as number;
  if (d < 0 && ![2, 19].includes(-d)) throw new Error(`cannot detach ${what} from tc ${direction} of ifindex ${ifindex}: ${errnoText(-d)}`);
}
