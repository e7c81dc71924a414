/**
 * kubectl-retina's on-call commands' client: `shell` (a pod with the shell image on a node, or an
 * ephemeral container in a pod, attached) and `bpftrace` (ready-made bpftrace programs on a node,
 * written for its kernel). It talks to the API server through src/k8s (requests, pods/exec and
 * pods/attach); printing, flags and exit codes are src/cli/debug's.
 */
export { DebugError } from './cluster.js';
export { SHELL_APP, TRACE_APP, TRACE_CAPABILITIES, capabilityNames, ephemeralShellContainer, nodeShellPod, tracePod, type ShellOptions } from './pods.js';
export { parseTarget, runShell, type ShellIo, type ShellOutcome, type ShellRequest, type ShellTarget } from './shell.js';
export { runTrace, type TraceIo, type TraceOutcome, type TraceRequest } from './trace.js';
export { TABLE_HEADER, TraceDecoder, tableRow, type TraceEvent, type TraceEventType } from './trace-events.js';
export { TRACE_KINDS, addressFilter, parseKernelFacts, traceScript, type AddressFilter, type KernelFacts, type TraceKind } from './trace-script.js';
