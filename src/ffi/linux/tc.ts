/**
 * tc attach. TCX (Linux 6.6+) through a BPF link made with bpf_link_create (libbpf 1.1 has no TCX
 * API): the kernel detaches it when its fd closes, even if the agent is killed. Elsewhere clsact,
 * through libbpf's bpf_tc_* API. clsact filters outlive a killed agent, and other programs (a CNI)
 * share the qdisc, so only filters of ours are ever removed (see README.md, "Which tc filters are
 * ours"): before an attach, leftovers of the same program from an earlier run on that interface and
 * direction; at detach, the filter we attached, if it still runs our program. A clsact qdisc we
 * created is removed when the last of our filters on it goes and it holds no filter at all; one that
 * was there before stays.
 */
import { errnoText, lastErrno, loadLibbpf } from './libbpf.js';
import type { BpfProgram } from './object.js';
import { loadSys } from './sys.js';
import { listTcFilters, progIdentity, progNameById, type TcFilter } from './tc-filters.js';

export type TcDirection = 'ingress' | 'egress';

const BPF_TC_INGRESS = 1;
const BPF_TC_EGRESS = 2;
const EEXIST = 17;
const TC_HOOK_SIZE = 24;
const TC_OPTS_SIZE = 32;

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

/**
 * Whether `f` (on the interface and direction `prog` is about to attach to) is a leftover of `prog`
 * from an earlier run: a bpf filter on chain 0 whose program has the kernel name of `prog` (names
 * are cut to 15 characters) and is not `prog` itself. The name comes from the program (TCA_BPF_ID);
 * libbpf's TCA_BPF_NAME ("<program>:[<id>]") only when the program cannot be opened.
 */
export function isStaleOf(f: TcFilter, self: { readonly id: number; readonly name: string }, nameOf: (id: number) => string | undefined): boolean {
  if (f.kind !== 'bpf' || f.handle === 0 || f.chain !== 0 || f.progId === undefined || f.progId === self.id) return false;
  const name = nameOf(f.progId) ?? /^(.*):\[\d+\]$/.exec(f.bpfName ?? '')?.[1];
  return name === self.name;
}

/** Removes the leftovers of `prog` (isStaleOf) on `direction` of `ifindex`; returns how many. */
function removeStale(prog: BpfProgram, ifindex: number, direction: TcDirection): number {
  const self = progIdentity(prog.fd);
  let removed = 0;
  for (const f of listTcFilters(ifindex, direction)) {
    if (!isStaleOf(f, self, progNameById)) continue;
    detachFilter(ifindex, direction, f.handle, f.priority, `a stale ${self.name} filter (program id ${f.progId})`);
    removed++;
  }
  return removed;
}

function detachFilter(ifindex: number, direction: TcDirection, handle: number, priority: number, what: string): void {
  const hook = { sz: TC_HOOK_SIZE, ifindex, attach_point: direction === 'ingress' ? BPF_TC_INGRESS : BPF_TC_EGRESS, parent: 0 };
  const d = loadLibbpf().tcDetach(hook, { sz: TC_OPTS_SIZE, prog_fd: 0, flags: 0, prog_id: 0, handle, priority }) as number;
  // ENOENT/ENODEV: the filter (or the interface) went away already.
  if (d < 0 && ![2, 19].includes(-d)) throw new Error(`cannot detach ${what} from tc ${direction} of ifindex ${ifindex}: ${errnoText(-d)}`);
}

export function attachTc(prog: BpfProgram, ifindex: number, direction: TcDirection): TcAttachment {
  const staleRemoved = removeStale(prog, ifindex, direction);
  const l = loadLibbpf();
  const point = direction === 'ingress' ? BPF_TC_INGRESS : BPF_TC_EGRESS;
  const qdisc = { sz: TC_HOOK_SIZE, ifindex, attach_point: BPF_TC_INGRESS | BPF_TC_EGRESS, parent: 0 };
  const created = l.tcHookCreate(qdisc) as number;
  if (created < 0 && -created !== EEXIST) {
    throw new Error(`cannot create clsact qdisc on ifindex ${ifindex}: ${errnoText(lastErrno(created))}`);
  }
  if (created === 0) ourQdiscs.set(ifindex, 0);
  if (ourQdiscs.has(ifindex)) ourQdiscs.set(ifindex, (ourQdiscs.get(ifindex) ?? 0) + 1);
  const hook = { sz: TC_HOOK_SIZE, ifindex, attach_point: point, parent: 0 };
  const opts = { sz: TC_OPTS_SIZE, prog_fd: prog.fd, flags: 0, prog_id: 0, handle: 0, priority: 0 };
  const rc = l.tcAttach(hook, opts) as number;
  if (rc < 0) {
    release(ifindex);
    throw new Error(`cannot attach ${prog.name} to tc ${direction} of ifindex ${ifindex}: ${errnoText(lastErrno(rc))}`);
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
        if (mine) detachFilter(ifindex, direction, handle, priority, prog.name);
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
  loadLibbpf().tcHookDestroy({ sz: TC_HOOK_SIZE, ifindex, attach_point: BPF_TC_INGRESS | BPF_TC_EGRESS, parent: 0 });
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
  if (fd < 0) throw new Error(`cannot attach ${prog.name} to TCX ${direction} of ifindex ${ifindex}: ${errnoText(lastErrno(fd))}`);
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
