/**
 * BPF_PROG_TEST_RUN (programs that are run by the agent rather than attached: packetparser's
 * connection-table sweep, the benchmarks' synthetic producers). The run-time statistics the tests and
 * benchmarks read are test/ebpf/run-stats.ts's.
 */
import { errnoText, loadLibbpf } from './libbpf.js';
import type { BpfProgram } from './object.js';

const TEST_RUN_OPTS_SIZE = 80;

/**
 * Runs `prog` `repeat` times over `packet`; returns the program's last return value. `ctx`: the
 * program's context in (for skb programs the leading fields of struct __sk_buff the kernel lets a
 * run set, e.g. ifindex: the device the packet seems to come from).
 */
export function testRunProgram(prog: BpfProgram | number, packet: Uint8Array, repeat: number, ctx?: Uint8Array): number {
  return testRunTimed(prog, packet, repeat, ctx).retval;
}

/** testRunProgram, with the kernel's own measure of the runs: the mean ns per run (its `duration`). */
export function testRunTimed(prog: BpfProgram | number, packet: Uint8Array, repeat: number, ctx?: Uint8Array): { retval: number; nsPerRun: number } {
  const l = loadLibbpf();
  const fd = typeof prog === 'number' ? prog : prog.fd;
  const opts = {
    sz: TEST_RUN_OPTS_SIZE, data_in: packet, data_out: null, data_size_in: packet.length, data_size_out: 0,
    ctx_in: ctx ?? null, ctx_out: null, ctx_size_in: ctx?.length ?? 0, ctx_size_out: 0, retval: 0, repeat, duration: 0, flags: 0, cpu: 0, batch_size: 0,
  };
  const rc = l.testRun(fd, opts) as number;
  if (rc < 0) throw new Error(`BPF_PROG_TEST_RUN failed: ${errnoText(-rc)}`);
  return { retval: opts.retval, nsPerRun: opts.duration };
}
