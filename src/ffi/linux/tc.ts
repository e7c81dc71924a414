/**
 * tc attach. TCX (Linux 6.6+) through a BPF link made with bpf_link_create (libbpf 1.1 has no TCX
 * API): the kernel detaches it when its fd closes, even if the agent is killed. Elsewhere clsact,
 * through libbpf's bpf_tc_* API. clsact filters outlive a killed agent, and other programs (a CNI)
 * share the qdisc, so only filters of ours are ever removed (see README.md, "Which tc filters are
 * ours", tc-leftovers.ts): before an attach, leftovers of the same program from an earlier run on that interface and
 * direction; at detach, the filter we attached, if it still runs our program. A clsact qdisc we
 * created is removed when the last of our filters on it goes and it holds no filter at all; one that
 * was there before stays.
 */
import { errnoError, lastErrno, loadLibbpf } from './libbpf.js';
import type { BpfProgram } from './object.js';
import { loadSys } from './sys.js';
import { TC_OPTS_SIZE, detachTcFilter, listTcFilters, progIdentity, tcHook } from './tc-filters.js';
import { removeLeftovers } from './tc-leftovers.js';

export type TcDirection = 'ingress' | 'egress';

const EEXIST = 17;

/** clsact qdiscs we created, by ifindex, with how many of our filters use them. */
const ourQdiscs = new Map<number, number>();

export interface TcAttachment extends Disposable {
  readonly mode: 'tcx' | 'clsact';
  readonly ifindex: number;
  readonly direction: TcDirection;
  readonly handle: number;
  readonly priority: number;
  /** clsact filters of the same program left by an earlier run (a killed agent), removed before this attach. */
  readonly staleRemoved: number;
}

/** Removes the leftovers of `prog` from earlier runs on `direction` of `ifindex` (same name, another program); returns how many. */
function removeStale(prog: BpfProgram, ifindex: number, direction: TcDirection): number {
  const self = progIdentity(prog.fd);
  return removeLeftovers(ifindex, direction, new Set([self.name]), new Set([self.id]));
}

export function attachTc(prog: BpfProgram, ifindex: number, direction: TcDirection): TcAttachment {
  const staleRemoved = removeStale(prog, ifindex, direction);
  const l = loadLibbpf();
  const created = l.tcHookCreate(tcHook(ifindex, 'both')) as number;
  if (created < 0 && -created !== EEXIST) {
    throw errnoError(`cannot create clsact qdisc on ifindex ${ifindex}`, lastErrno(created));
  }
  if (created === 0) ourQdiscs.set(ifindex, 0);
  if (ourQdiscs.has(ifindex)) ourQdiscs.set(ifindex, (ourQdiscs.get(ifindex) ?? 0) + 1);
  const opts = { sz: TC_OPTS_SIZE, prog_fd: prog.fd, flags: 0, prog_id: 0, handle: 0, priority: 0 };
  const rc = l.tcAttach(tcHook(ifindex, direction), opts) as number;
  if (rc < 0) {
    release(ifindex);
    throw errnoError(`cannot attach ${prog.name} to tc ${direction} of ifindex ${ifindex}`, lastErrno(rc));
  }
  const { handle, priority, prog_id: progId } = opts;
  let done = false;
  return {
    mode: 'clsact', ifindex, direction, handle, priority, staleRemoved,
    [Symbol.dispose]() {
      if (done) return;
      done = true;
      try {
        // Another run of ours may have replaced our filter, and its handle and priority reused: only ours goes.
        const mine = listTcFilters(ifindex, direction).some((f) => f.handle === handle && f.priority === priority && f.progId === progId);
        if (mine) detachTcFilter(ifindex, direction, handle, priority, prog.name);
      } finally {
        release(ifindex);
      }
    },
  };
}

/** Drops one use of a qdisc we created; the last removes it, unless it still holds any filter (ours are gone by then). */
function release(ifindex: number): void {
  const n = ourQdiscs.get(ifindex);
  if (n === undefined) return;
  if (n > 1) {
    ourQdiscs.set(ifindex, n - 1);
    return;
  }
  ourQdiscs.delete(ifindex);
  if (listTcFilters(ifindex, 'ingress').length || listTcFilters(ifindex, 'egress').length) return;
  loadLibbpf().tcHookDestroy(tcHook(ifindex, 'both'));
}

const BPF_TCX_INGRESS = 46;
const BPF_TCX_EGRESS = 47;

/**
 * Attaches through TCX (a BPF link); throws when the kernel has no TCX. clsact leftovers of the same
 * program (an earlier run in clsact mode) are removed first: they would count every packet twice.
 */
export function attachTcx(prog: BpfProgram, ifindex: number, direction: TcDirection): TcAttachment {
  const staleRemoved = removeStale(prog, ifindex, direction);
  const l = loadLibbpf();
  const fd = l.linkCreate(prog.fd, ifindex, direction === 'ingress' ? BPF_TCX_INGRESS : BPF_TCX_EGRESS, null) as number;
  if (fd < 0) throw errnoError(`cannot attach ${prog.name} to TCX ${direction} of ifindex ${ifindex}`, lastErrno(fd));
  let done = false;
  return {
    mode: 'tcx', ifindex, direction, handle: 0, priority: 0, staleRemoved,
    [Symbol.dispose]() {
      if (done) return;
      done = true;
      loadSys().close(fd);
    },
  };
}

/** TCX where the kernel has it, clsact otherwise (or when `mode` says so). */
export function attachTcAuto(prog: BpfProgram, ifindex: number, direction: TcDirection, mode: 'auto' | 'tcx' | 'clsact' = 'auto'): TcAttachment {
  if (mode === 'clsact') return attachTc(prog, ifindex, direction);
  try {
    return attachTcx(prog, ifindex, direction);
  } catch (e) {
    if (mode === 'tcx') throw e;
    return attachTc(prog, ifindex, direction);
  }
}
