/**
 * `kubectl-retina bpftrace NODE`: Retina's flags (the event kinds, --ip/--cidr, --duration,
 * --startup-timeout, -o table|json, the image flags), IPv4 and IPv6 addresses; the trace is src/debug's.
 * Events go to stdout (a table, or one JSON object per line between Retina's start and end lines);
 * what happens (the pod, the kernel's limits) to stderr, so `-o json | jq` reads only events.
 */
import { DebugError, TABLE_HEADER, TRACE_KINDS, addressFilter, parseTarget, runTrace, tableRow, type AddressFilter, type TraceKind, type TraceRequest } from '../../debug/index.js';
import { parseDurationMs } from '../../config/index.js';
import { parseFlags, UsageError, type Flags } from '../args.js';
import { connect } from '../capture/flags.js';
import { withKubeFlags, type KubeFlags } from '../kube-flags.js';
import { IMAGE_FLAGS, IMAGE_USAGE, shellImage } from './image.js';
import { stopOnSignals } from './signals.js';

export const BPFTRACE_USAGE = `usage: kubectl-retina bpftrace NODE [-n NAMESPACE] [flags] [kubectl's flags: kubectl-retina options]

Trace network problems on a node with bpftrace (a trace pod on the node, deleted at the end and on Ctrl-C).
Events (all when none is named): --drops (packets the kernel drops, with its reason), --rst (TCP resets sent
and received), --errors (socket errors: ECONNREFUSED, ETIMEDOUT, ...), --retransmits (TCP retransmissions),
--nfqueue-drops (packets sent to an NFQUEUE nobody reads), --all
Filters: --ip IP, --cidr CIDR (IPv4 or IPv6; source or destination; a comma-separated list is each of them)
Output: -o, --output table|json   --duration 0 (until Ctrl-C; 30s, 5m: then the trace ends itself)
  --startup-timeout 30s (how long to wait for the trace pod)
${IMAGE_USAGE}`;

const KIND_FLAGS: Readonly<Record<string, TraceKind>> = { drops: 'drops', rst: 'rst', errors: 'errors', retransmits: 'retransmits', 'nfqueue-drops': 'nfqueue' };

export const BPFTRACE_FLAGS = {
  strings: { ...IMAGE_FLAGS, ip: undefined, cidr: undefined, output: 'table', duration: '0', 'startup-timeout': '30s' },
  booleans: { all: false, drops: false, rst: false, errors: false, retransmits: false, 'nfqueue-drops': false },
  short: { o: 'output' },
  positionals: true,
};

export interface BpftraceInput {
  readonly request: Omit<TraceRequest, 'namespace'>;
  readonly json: boolean;
}

/** Flags -> the trace request: every value checked, each error naming its flag. */
export function bpftraceRequest(f: Flags, env: NodeJS.ProcessEnv): BpftraceInput {
  if (f.positionals.length !== 1) throw new UsageError(`expected one NODE, got ${f.positionals.length}`);
  let node: string;
  const filters: AddressFilter[] = [];
  try {
    const t = parseTarget(f.positionals[0] as string);
    if (t.kind !== 'node') throw new Error('bpftrace traces nodes, not pods: name the pod\'s node (kubectl get pod -o wide)');
    node = t.node;
    for (const ip of f.list('ip')) filters.push(addressFilter('--ip', ip));
    for (const c of f.list('cidr')) filters.push(addressFilter('--cidr', c));
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  const output = f.str('output');
  if (output !== 'table' && output !== 'json') throw new UsageError(`--output: ${JSON.stringify(output)} is not table or json`);
  const duration = parseDurationMs(f.str('duration') ?? '');
  if (duration === undefined || (duration > 0 && duration < 1000)) throw new UsageError(`--duration: ${JSON.stringify(f.str('duration'))} is not 0 or a duration of 1s or more (30s, 5m)`);
  const startup = parseDurationMs(f.str('startup-timeout') ?? '');
  if (startup === undefined || startup <= 0) throw new UsageError(`--startup-timeout: ${JSON.stringify(f.str('startup-timeout'))} is not a positive duration (30s, 2m)`);
  const named = Object.keys(KIND_FLAGS).filter((k) => f.bool(k)).map((k) => KIND_FLAGS[k] as TraceKind);
  const kinds = new Set<TraceKind>(f.bool('all') || named.length === 0 ? TRACE_KINDS : named);
  return {
    json: output === 'json',
    request: { node, image: shellImage(f, env), kinds, filters, durationSeconds: Math.ceil(duration / 1000), startupTimeoutMs: startup },
  };
}

const err = (s: string): boolean => process.stderr.write(`kubectl-retina bpftrace: ${s}\n`);
const out = (s: string): boolean => process.stdout.write(s + '\n');

export async function runBpftraceCommand(argv: readonly string[], env: NodeJS.ProcessEnv, kubeFlags: KubeFlags = {}): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(BPFTRACE_USAGE);
    return 0;
  }
  let input: BpftraceInput;
  let kubeArgs: KubeFlags;
  try {
    const split = withKubeFlags(argv, kubeFlags);
    kubeArgs = split.kube;
    input = bpftraceRequest(parseFlags(split.rest, BPFTRACE_FLAGS), env);
  } catch (e) {
    err(`${(e as Error).message}\n${BPFTRACE_USAGE}`);
    return 2;
  }
  const kube = await connect(kubeArgs, env, 'bpftrace');
  if (!kube) return 1;
  const client = kube.client();
  using stop = stopOnSignals((sig) => err(`${sig}: stopping the trace and deleting its pod`));
  const { json } = input;
  // the kernel's timer ends a --duration trace; this one only guards against a trace that never reports back
  const durationMs = input.request.durationSeconds * 1000;
  const late = new AbortController();
  const guard = durationMs ? setTimeout(() => late.abort(new DebugError('the trace did not end on its own a minute after --duration; stopped')), durationMs + input.request.startupTimeoutMs + 60_000) : undefined;
  try {
    const r = await runTrace(client, { ...input.request, namespace: kube.namespace }, {
      signal: AbortSignal.any([stop.signal, late.signal]),
      note: (n) => err(n),
      started: () => {
        if (json) out(JSON.stringify({ event: 'start', message: `tracing ${[...input.request.kinds].join(', ')} on node ${input.request.node}` }));
        else {
          err(`tracing ${[...input.request.kinds].join(', ')} on node ${input.request.node}${input.request.filters.length ? ` for ${input.request.filters.map((x) => x.text).join(', ')}` : ''}${durationMs ? ` for ${input.request.durationSeconds}s` : '; Ctrl-C stops'}`);
          out(TABLE_HEADER);
        }
      },
      event: (e) => out(json ? JSON.stringify(e) : tableRow(e)),
    });
    if (json) out(JSON.stringify({ event: 'end', message: 'Trace complete', events: r.events }));
    else err(`trace complete: ${r.events} event(s)`);
    return 0;
  } catch (e) {
    if (stop.by()) {
      if (json) out(JSON.stringify({ event: 'end', message: `stopped by ${stop.by() ?? ''}` }));
      return 0;
    }
    err(late.signal.aborted ? (late.signal.reason as Error).message : (e as Error).message);
    return 1;
  } finally {
    clearTimeout(guard);
    client.close();
  }
}
