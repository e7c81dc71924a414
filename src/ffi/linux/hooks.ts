/**
 * Which kernel hook each eBPF plugin uses, decided in one place from the running kernel's BTF. By
 * design no plugin uses kprobes or fentry: every hook is a BTF raw tracepoint (tp_btf), tc or a
 * socket filter. dropreason needs kfree_skb with its drop reason (Linux 5.17+); tcpretrans picks
 * the program for its tracepoint's signature (6.12+ adds `err`); tc and the socket filter are
 * fixed. How tc attaches (tcx or clsact) is tc.ts's choice, at attach time.
 */
import { kernelHasFunc, tracepointArgCount, tracepointArgTypes } from './btf.js';
import { kernelHasHelper } from './probe.js';

export type HookKind = 'tp_btf' | 'tc' | 'socket_filter';

export interface HookChoice {
  /** The program to load from the plugin's object. */
  readonly program: string;
  readonly kind: HookKind;
  /** tp_btf: the tracepoint; tc: ingress | egress; socket_filter: what it is bound to. */
  readonly target: string;
  /** For log lines and errors: "tp_btf/kfree_skb". */
  readonly label: string;
}

const hook = (program: string, kind: HookKind, target: string): HookChoice => ({ program, kind, target, label: `${kind}/${target}` });

export const packetforwardHooks = (): readonly HookChoice[] => [
  hook('packetforward_ingress', 'tc', 'ingress'),
  hook('packetforward_egress', 'tc', 'egress'),
];

/** What the dropreason program reads: the kernel's reason (5.17+) or the coarse no-reason fallback. */
export type DropReasonSource = 'reason' | 'noreason';

/**
 * kfree_skb carries `enum skb_drop_reason` as its third argument since Linux 5.17, read from the
 * BTF of the tracepoint's prototype (not the version string: distributions backport). Without it
 * (5.15: AKS Ubuntu 22.04, Azure Linux 2), or with `forceNoReason` (dropReasonFallback: always, the
 * same choice pretending it is absent), the variant that reads only skb and location.
 */
export function dropreasonHooks(opts: { readonly forceNoReason?: boolean } = {}): readonly DropreasonHookChoice[] {
  const args = tracepointArgTypes('kfree_skb');
  if (args === undefined) throw new Error('the kernel has no kfree_skb tracepoint in its BTF (tp_btf/kfree_skb)');
  return [dropreasonHookFor(args, opts.forceNoReason ?? false)];
}

export type DropreasonHookChoice = HookChoice & { readonly source: DropReasonSource };

/** The choice from kfree_skb's argument types (tracepointArgTypes), pure. */
export function dropreasonHookFor(args: readonly string[], forceNoReason: boolean): DropreasonHookChoice {
  if (args[0] !== 'struct sk_buff *' || args[1] !== 'void *') throw new Error(`tp_btf/kfree_skb passes (${args.join(', ')}) here, expected (struct sk_buff *, void *, ...)`);
  return args[2] === 'enum skb_drop_reason' && !forceNoReason
    ? { ...hook('dropreason_kfree_skb', 'tp_btf', 'kfree_skb'), source: 'reason' }
    : { ...hook('dropreason_kfree_skb_noreason', 'tp_btf', 'kfree_skb'), source: 'noreason' };
}

/** 6.12+ passes `err` and fires for failed attempts too: use the variant that skips those. */
export function tcpretransHooks(): readonly HookChoice[] {
  const args = tracepointArgCount('tcp_retransmit_skb');
  if (args === undefined) throw new Error('the kernel has no tcp_retransmit_skb tracepoint in its BTF (tp_btf/tcp_retransmit_skb)');
  return [hook(args >= 3 ? 'tcpretrans_tp_err' : 'tcpretrans_tp', 'tp_btf', 'tcp_retransmit_skb')];
}

/**
 * dns: the socket filter sees what arrives on every interface (its socket ignores outgoing packets),
 * the tc egress program what this host builds as it leaves any interface but lo (and bridge ports: the
 * plugin leaves those out).
 */
export const dnsHooks = (): readonly HookChoice[] => [
  hook('dns_socket_filter', 'socket_filter', 'AF_PACKET ETH_P_ALL, every interface, arrivals'),
  hook('retina_dns_egress', 'tc', 'egress'),
];

/**
 * packetparser: tc on both sides of every pod veth's host end (the endpoint programs) and, with low
 * aggregation, on the host interfaces. `target` is the tc direction. `translate`: the *_ct
 * variants, which report the real ends of a NATed connection (a ClusterIP Service's backend, not
 * its address) from the kernel's conntrack; chosen when the kernel has the conntrack kfuncs
 * (bpf_skb_ct_lookup, bpf_ct_release: Linux 5.18+, in vmlinux or in the loaded nf_conntrack
 * module's BTF), or forced either way by `opts.translate`.
 */
export interface PacketparserHooks {
  readonly endpoint: readonly HookChoice[];
  readonly host: readonly HookChoice[];
  readonly translate: boolean;
  /**
   * The connection-table sweep, run with BPF_PROG_TEST_RUN: `packetparser_sweep` walks the table itself
   * (bpf_for_each_map_elem, Linux 5.13+); `packetparser_sweep_keys` sweeps the keys the agent lists and
   * passes in (5.10 – 5.12: Amazon Linux 2's 5.10). The kernel matrix runs both.
   */
  readonly sweep: 'packetparser_sweep' | 'packetparser_sweep_keys';
}

export const packetparserHooks = (opts: { readonly translate?: boolean; readonly keyedSweep?: boolean } = {}): PacketparserHooks =>
  packetparserHooksFor(
    opts.translate ?? (kernelHasFunc('bpf_skb_ct_lookup', 'nf_conntrack') && kernelHasFunc('bpf_ct_release', 'nf_conntrack')),
    opts.keyedSweep ?? !kernelHasHelper('sched_cls', 'for_each_map_elem'),
  );

/** The choice for a kernel with (`translate`) or without the conntrack kfuncs, and with or without bpf_for_each_map_elem, pure. */
export function packetparserHooksFor(translate: boolean, keyedSweep = false): PacketparserHooks {
  const v = translate ? '_ct' : '';
  return {
    endpoint: [hook(`packetparser_endpoint_ingress${v}`, 'tc', 'ingress'), hook(`packetparser_endpoint_egress${v}`, 'tc', 'egress')],
    host: [hook(`packetparser_host_ingress${v}`, 'tc', 'ingress'), hook(`packetparser_host_egress${v}`, 'tc', 'egress')],
    translate,
    sweep: keyedSweep ? 'packetparser_sweep_keys' : 'packetparser_sweep',
  };
}
