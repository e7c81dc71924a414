/**
 * manifest.json, beside the pcap in the tarball's folder: what was captured, where, with which
 * filters, when it started and stopped and why, the packet and drop counts, and each capture file
 * with its size and sha256 (so a download can be checked).
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { combinedFilter, type WorkloadEnv } from './env.js';
import type { CaptureCounts } from './provider.js';
import type { ManifestTrigger } from './triggered.js';

/** Why the capture stopped; a triggered capture's: `postTrigger` (its window after the trigger ended) or `notTriggered` (armed for the duration, no trigger). */
export type StopReason = 'duration' | 'maxSize' | 'signal' | 'toolEnded' | 'postTrigger' | 'notTriggered';

export interface ManifestFile {
  readonly name: string;
  readonly size: number;
  readonly sha256: string;
}

export interface Manifest {
  readonly manifestVersion: 1;
  readonly captureName: string;
  readonly nodeName: string;
  readonly podName: string | undefined;
  readonly podNamespace: string | undefined;
  readonly os: string;
  readonly filters: {
    readonly tcpdumpFilter: string;
    readonly tcpdumpRawFilter: string;
    readonly pcapFilter: string;
    /** The expression the capture ran with (Linux). */
    readonly effective: string;
    readonly netshFilter: string;
    readonly interfaces: readonly string[];
  };
  readonly options: { readonly durationMs: number; readonly maxSizeMb: number; readonly fileCount: number; readonly packetSize: number; readonly tcpdumpFlags: readonly string[] };
  readonly startedAt: string;
  readonly stoppedAt: string;
  readonly stopReason: StopReason;
  readonly packets: number | null;
  readonly dropped: number | null;
  readonly files: readonly ManifestFile[];
  readonly metadata: boolean;
  /** A triggered capture's trigger: what armed it, the flow that fired it, where its packet is in the file (ours). */
  readonly trigger?: ManifestTrigger;
}

export function sha256File(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path).on('error', reject).on('data', (c) => h.update(c)).on('end', () => resolve(h.digest('hex')));
  });
}

/** The capture files of `dir`: `<base>*.pcap` with tcpdump's rotation numbers. */
export async function captureFiles(dir: string, base: string): Promise<ManifestFile[]> {
  const names = (await readdir(dir)).filter((f) => f.startsWith(base) && /\.pcap\d*$/.test(f)).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return Promise.all(names.map(async (name) => ({ name, size: (await stat(join(dir, name))).size, sha256: await sha256File(join(dir, name)) })));
}

export interface ManifestInput {
  readonly env: WorkloadEnv;
  readonly os: string;
  readonly startedAt: Date;
  readonly stoppedAt: Date;
  readonly stopReason: StopReason;
  readonly counts: CaptureCounts;
  readonly files: readonly ManifestFile[];
  readonly metadata: boolean;
  readonly trigger?: ManifestTrigger | undefined;
}

export function buildManifest(i: ManifestInput): Manifest {
  const e = i.env;
  return {
    manifestVersion: 1, captureName: e.captureName, nodeName: e.nodeName, podName: e.podName, podNamespace: e.podNamespace, os: i.os,
    filters: { tcpdumpFilter: e.tcpdumpFilter, tcpdumpRawFilter: e.tcpdumpRawFilter, pcapFilter: e.pcapFilter, effective: combinedFilter(e), netshFilter: e.netshFilter, interfaces: e.interfaces },
    options: { durationMs: e.durationMs, maxSizeMb: e.maxSizeMb, fileCount: e.fileCount, packetSize: e.packetSize, tcpdumpFlags: e.tcpdumpFlags },
    startedAt: i.startedAt.toISOString(), stoppedAt: i.stoppedAt.toISOString(), stopReason: i.stopReason,
    packets: i.counts.packets, dropped: i.counts.dropped, files: i.files, metadata: i.metadata,
    ...(i.trigger ? { trigger: i.trigger } : {}),
  };
}
