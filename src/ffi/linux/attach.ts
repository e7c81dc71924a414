/**
 * Attaching programs that libbpf attaches by their section (tp_btf/..., raw tracepoints) and socket
 * filters. Each attach returns a Disposable that detaches.
 */
import { errnoError, lastErrno, libbpfLogTail, loadLibbpf } from './libbpf.js';
import type { BpfProgram } from './object.js';
import { loadSys } from './sys.js';

/** Attaches by section name (tp_btf/<event>, raw_tp/<event>, ...): the BPF link is destroyed on dispose. */
export function attachBySection(prog: BpfProgram, what: string): Disposable {
  const l = loadLibbpf();
  const link: unknown = l.attach(prog.handle);
  if (!link) throw errnoError(`cannot attach ${prog.name} to ${what}`, lastErrno(), libbpfLogTail(l));
  let done = false;
  return {
    [Symbol.dispose]() {
      if (done) return;
      done = true;
      l.linkDestroy(link);
    },
  };
}

/**
 * Opens an AF_PACKET raw socket on every interface of this network namespace with `prog` as its
 * filter (attached before the socket starts receiving). Closing the socket detaches the filter.
 * `arrivalsOnly`: the socket ignores packets leaving (PACKET_IGNORE_OUTGOING), so the kernel does not
 * clone every one of them for it.
 */
export function attachPacketSocketFilter(prog: BpfProgram, o: { readonly arrivalsOnly?: boolean } = {}): Disposable & { readonly fd: number } {
  const sys = loadSys();
  const fd = sys.packetSocket();
  try {
    sys.attachSocketFilter(fd, prog.fd);
    if (o.arrivalsOnly) sys.ignoreOutgoing(fd);
    sys.bindAllInterfaces(fd);
  } catch (e) {
    sys.close(fd);
    throw new Error(`cannot attach socket filter ${prog.name}: ${(e as Error).message}`, { cause: e });
  }
  let done = false;
  return {
    fd,
    [Symbol.dispose]() {
      if (done) return;
      done = true;
      sys.close(fd);
    },
  };
}
