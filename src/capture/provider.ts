/**
 * The OS seam of the capture workload: a provider checks the capture's filter, starts the OS's
 * capture tool (tcpdump on Linux, pktmon on Windows), stops it and says what it captured, and
 * collects the node's network state as metadata. src/platform/<os>/capture.ts builds this OS's
 * provider; the workload (workload.ts) drives it without knowing the OS.
 */
import type { Logger } from '../log/index.js';
import type { WorkloadEnv } from './env.js';

/** A capture the workload cannot run, with a message for the user (and the pod's termination message). */
export class CaptureError extends Error {
  override readonly name = 'CaptureError';
}

export interface CaptureCounts {
  /** Packets written to the capture files (null when the tool did not say and the files could not be read). */
  readonly packets: number | null;
  /** Packets the kernel (or pktmon) dropped before the tool saw them (null when unknown). */
  readonly dropped: number | null;
}

export interface RunningCapture {
  /** Bytes written to the capture files so far (the max-size poll). */
  bytesWritten(): Promise<number>;
  /** Resolves when the tool ended by itself (a crash, an interface gone): its message. */
  readonly ended: Promise<string>;
  /** Stops the tool, waits for its files, and says what was captured. */
  stop(): Promise<CaptureCounts>;
}

/** A capture whose packets come as a classic pcap byte stream (a triggered capture's ring reads it). */
export interface StreamingCapture {
  /** The pcap stream: the global header, then one record per packet, as the tool writes them. */
  readonly packets: NodeJS.ReadableStream;
  /** Resolves when the tool ended by itself: its message. */
  readonly ended: Promise<string>;
  /** Stops the tool and waits for the end of its stream; the tool's own counts (dropped by the kernel). */
  stop(): Promise<CaptureCounts>;
}

export interface StartOptions {
  /** The folder the capture files go to (the tarball's folder). */
  readonly dir: string;
  /** `<capture>-<node>-<ts>UTC`: the pcap is `<base>.pcap` (rotation: the tool's numbered files). */
  readonly base: string;
  /** Where the tool's own output goes (`tcpdump.log`, `pktmon.log`). */
  readonly logFile: string;
  readonly log: Logger;
}

export interface CaptureProvider {
  readonly os: 'linux' | 'windows';
  /** The tool's log file name inside the tarball's folder. */
  readonly logName: string;
  /** Whether the provider applies the max size itself (then the workload does not poll the size). */
  limitsSize(env: WorkloadEnv): boolean;
  /** Checks what can be checked before starting (the filter's syntax, the tool is there); throws CaptureError. */
  check(env: WorkloadEnv, log: Logger): Promise<void>;
  start(env: WorkloadEnv, opts: StartOptions): Promise<RunningCapture>;
  /** A triggered capture's stream (undefined: this OS's provider has none, and triggered captures are refused). */
  readonly startStream?: (env: WorkloadEnv, opts: Pick<StartOptions, 'logFile' | 'log'>) => Promise<StreamingCapture>;
  /** Writes the node's network state into `dir` (the tarball's `metadata/`); never throws for one part that fails. */
  collectMetadata(dir: string, log: Logger): Promise<void>;
}
