/**
 * tc attach. TCX (Linux 6.6+) through a BPF link made with bpf_link_create (libbpf 1.1 has no TCX
 * API): the kernel detaches it when its fd closes, even if the agent is killed. Elsewhere clsact,
 * through libbpf's bpf_tc_* API: a clsact qdisc we create is removed again when the last of our
 * filters on that interface goes; one that was there before stays (others may use it). Filters are
 * detached by their handle and priority.
 */
import { errnoError, errnoText, lastErrno, loadLibbpf } from './libbpf.js';
import type { BpfProgram } from './object.js';
import { loadSys } from './sys.js';

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
}

export function attachTc(prog: BpfProgram, ifindex: number, direction: TcDirection): TcAttachment {
  const l = loadLibbpf();
  const point = direction === 'ingress' ? BPF_TC_INGRESS : BPF_TC_EGRESS;
  const qdisc = { sz: TC_HOOK_SIZE, ifindex, attach_point: BPF_TC_INGRESS | BPF_TC_EGRESS, parent: 0 };
  const created = l.tcHookCreate(qdisc) as number;
  if (created < 0 && -created !== EEXIST) {
    throw errnoError(`cannot create clsact qdisc on ifindex ${ifindex}`, lastErrno(created));
  }
  if (created === 0) ourQdiscs.set(ifindex, 0);
  if (ourQdiscs.has(ifindex)) ourQdiscs.set(ifindex, (ourQdiscs.get(ifindex) ?? 0) + 1);
  const hook = { sz: TC_HOOK_SIZE, ifindex, attach_point: point, parent: 0 };
  const opts = { sz: TC_OPTS_SIZE, prog_fd: prog.fd, flags: 0, prog_id: 0, handle: 0, priority: 0 };
  const rc = l.tcAttach(hook, opts) as number;
  if (rc < 0) {
    release(ifindex);
    throw errnoError(`cannot attach ${prog.name} to tc ${direction} of ifindex ${ifindex}`, lastErrno(rc));
  }
  const { handle, priority } = opts;
  let done = false;
  return {
    mode: 'clsact', ifindex, direction, handle, priority,
    [Symbol.dispose]() {
      if (done) return;
      done = true;
      const d = l.tcDetach(hook, { sz: TC_OPTS_SIZE, prog_fd: 0, flags: 0, prog_id: 0, handle, priority }) as number;
      release(ifindex);
      // ENOENT/ENODEV: the interface (and its filters) went away already.
      if (d < 0 && ![2, 19].includes(-d)) throw new Error(`cannot detach ${prog.name} from tc ${direction} of ifindex ${ifindex}: ${errnoText(-d)}`);
    },
  };
}

function release(ifindex: number): void {
  const n = ourQdiscs.get(ifindex);
  if (n === undefined) return;
  if (n > 1) {
    ourQdiscs.set(ifindex, n - 1);
    return;
  }
  ourQdiscs.delete(ifindex);
  loadLibbpf().tcHookDestroy({ sz: TC_HOOK_SIZE, ifindex, attach_point: BPF_TC_INGRESS | BPF_TC_EGRESS, parent: 0 });
}

const BPF_TCX_INGRESS = 46;
const BPF_TCX_EGRESS = 47;

/** Attaches through TCX (a BPF link); throws when the kernel has no TCX. */
export function attachTcx(prog: BpfProgram, ifindex: number, direction: TcDirection): TcAttachment {
  const l = loadLibbpf();
  const fd = l.linkCreate(prog.fd, ifindex, direction === 'ingress' ? BPF_TCX_INGRESS : BPF_TCX_EGRESS, null) as number;
  if (fd < 0) throw errnoError(`cannot attach ${prog.name} to TCX ${direction} of ifindex ${ifindex}`, lastErrno(fd));
  let done = false;
  return {
    mode: 'tcx', ifindex, direction, handle: 0, priority: 0,
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
