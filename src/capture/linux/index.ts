/** The Linux capture provider: tcpdump and the node's network state (see tcpdump.ts, metadata.ts). */
import type { CaptureProvider } from '../provider.js';
import { collectLinuxMetadata, type LinuxMetadataOptions } from './metadata.js';
import { checkFilter, startTcpdump, startTcpdumpStream } from './tcpdump.js';

export { captureInterfaces, parseTcpdumpSummary, pcapName, tcpdumpArgs, tcpdumpStreamArgs } from './tcpdump.js';
export { METADATA_FILES } from './metadata.js';

export function linuxCaptureProvider(metadata: LinuxMetadataOptions = {}): CaptureProvider {
  return {
    os: 'linux',
    logName: 'tcpdump.log',
    // With a file count tcpdump rotates at the max size itself (-C/-W, per file as Retina); else the workload polls.
    limitsSize: (env) => env.fileCount > 0,
    check: (env) => checkFilter(env),
    start: (env, opts) => startTcpdump(env, opts),
    startStream: (env, opts) => startTcpdumpStream(env, opts),
    collectMetadata: (dir, log) => collectLinuxMetadata(dir, log, metadata),
  };
}
