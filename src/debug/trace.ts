/**
 * `kubectl retina bpftrace NODE` (Retina's shell/trace.go): a trace pod on the node, the kernel's
 * tracepoint formats read in it, the program written for that kernel (trace-script.ts) and run with
 * bpftrace through pods/exec, its lines decoded into events (trace-events.ts) as they come. The pod is
 * deleted at the end: when the program exits (--duration, in the kernel's own timer), on an error, and
 * when the signal aborts (Ctrl-C, SIGTERM).
 */
import { Writable } from 'node:stream';
import { execInPod, type RestClient } from '../k8s/index.js';
import { createPod, deletePod, linuxNode, waitForContainerRunning, DebugError } from './cluster.js';
import { TRACE_CONTAINER, randomName, tracePod } from './pods.js';
import { TraceDecoder, type TraceEvent } from './trace-events.js';
import { KERNEL_FACTS_SCRIPT, parseKernelFacts, traceScript, type ScriptOptions } from './trace-script.js';

/** Pages of bpftrace's perf ring per CPU (its default 64 lost events on a busy node's drop bursts): 1 MiB per CPU. */
const PERF_RB_PAGES = 256;

export interface TraceRequest extends ScriptOptions {
  readonly node: string;
  readonly namespace: string;
  readonly image: string;
  readonly startupTimeoutMs: number;
}

export interface TraceIo {
  readonly signal: AbortSignal;
  event(e: TraceEvent): void;
  /** What happens (the pod, the kernel's limits, bpftrace's own messages). */
  note(text: string): void;
  /** The program is attached and tracing. */
  started(): void;
}

export interface TraceOutcome {
  readonly pod: string;
  readonly events: number;
  /** The program ended on its own (--duration) rather than being stopped. */
  readonly completed: boolean;
}

/** A Writable that hands each whole line to `line`. */
function lineSink(line: (l: string) => void): Writable {
  let rest = '';
  return new Writable({
    write(chunk: Buffer, _enc, done): void {
      const parts = (rest + chunk.toString('utf8')).split('\n');
      rest = parts.pop() ?? '';
      for (const p of parts) line(p);
      done();
    },
    final(done): void {
      if (rest) line(rest);
      done();
    },
  });
}

async function execText(client: RestClient, namespace: string, pod: string, command: string[], signal: AbortSignal): Promise<string> {
  let out = '';
  let err = '';
  const status = await execInPod(client.config, {
    namespace, pod, container: TRACE_CONTAINER, command, signal, userAgent: 'kubectl-retina',
    stdout: new Writable({ write: (c: Buffer, _e, d) => { out += c.toString('utf8'); d(); } }),
    stderr: new Writable({ write: (c: Buffer, _e, d) => { err += c.toString('utf8'); d(); } }),
  });
  if (status?.status === 'Failure') throw new DebugError(`${command[0] ?? ''} in ${namespace}/${pod}: ${status.message ?? ''} ${err.trim()}`);
  return out;
}

export async function runTrace(client: RestClient, req: TraceRequest, io: TraceIo): Promise<TraceOutcome> {
  await linuxNode(client, req.node);
  const pod = tracePod(randomName('retina-trace'), req.namespace, req.node, req.image);
  const name = pod.metadata.name;
  await createPod(client, pod);
  io.note(`trace pod ${req.namespace}/${name} on node ${req.node} (image ${req.image})`);
  let events = 0;
  let completed = false;
  try {
    await waitForContainerRunning(client, req.namespace, name, TRACE_CONTAINER, req.startupTimeoutMs, io.signal);
    const facts = parseKernelFacts(await execText(client, req.namespace, name, ['sh', '-c', KERNEL_FACTS_SCRIPT], io.signal));
    if (facts.formats.size === 0) throw new DebugError(`node ${req.node}: no tracepoint format readable under /sys/kernel/tracing/events (is tracefs mounted on the node?)`);
    const script = traceScript(facts, req);
    for (const n of script.notes) io.note(n);
    const decoder = new TraceDecoder(facts);
    const stdout = lineSink((l) => {
      const d = decoder.decode(l);
      if (d === 'start') io.started();
      else if (d === 'end') completed = true;
      else if (d) {
        events++;
        io.event(d);
      } else if (l.trim() && !/^Attaching \d+ probes?/.test(l)) io.note(`bpftrace: ${l.trim()}`);
    });
    // bpftrace's stderr: its RLIMIT_MEMLOCK complaint is harmless on a kernel that accounts BPF memory to
    // the cgroup (5.11+); the trace pod does not get SYS_RESOURCE, which some nodes cannot grant.
    const stderr = lineSink((l) => {
      if (l.trim() && !/RLIMIT_MEMLOCK/.test(l)) io.note(`bpftrace: ${l.trim()}`);
    });
    const status = await execInPod(client.config, {
      namespace: req.namespace, pod: name, container: TRACE_CONTAINER, command: ['env', `BPFTRACE_PERF_RB_PAGES=${PERF_RB_PAGES}`, 'bpftrace', '-B', 'line', '-e', script.text],
      stdout, stderr, signal: io.signal, userAgent: 'kubectl-retina',
    });
    await new Promise<void>((r) => stdout.end(r));
    if (status?.status === 'Failure' && !completed) throw new DebugError(`bpftrace on node ${req.node} failed: ${status.message ?? 'no message'}`);
    return { pod: name, events, completed };
  } finally {
    await deletePod(client, req.namespace, name);
    io.note(`trace pod ${req.namespace}/${name} deleted`);
  }
}
