/**
 * The Linux node's network state, into the tarball's `metadata/` (Retina's file names where it has
 * them): ip-resources.txt (addresses, neighbours, rules and routes of every table, IPv4 and IPv6),
 * iptables-rules.txt (iptables-save -c of the nft and the legacy back end, IPv4 and IPv6, and the filter/nat/mangle listings with counters),
 * nftables.txt (`nft list ruleset`), socket-stats.txt (`ss -s`, `ss -tapionume`), and bounded copies
 * of /proc/net (proc-net/) and /proc/sys/net (proc-sys-net/). A command that fails or is missing
 * leaves its error in its place and the rest is still collected.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../log/index.js';
import { copyTree, type CopyLimits, PROC_LIMITS } from '../copy-tree.js';
import { runTool } from '../run-tool.js';

type Cmd = readonly [string, ...string[]];

export const METADATA_FILES: Readonly<Record<string, readonly Cmd[]>> = {
  'ip-resources.txt': [
    ['ip', '-d', '-j', 'addr', 'show'], ['ip', '-d', '-j', 'neighbor', 'show'], ['ip', '-4', 'rule', 'list'], ['ip', '-6', 'rule', 'list'],
    ['ip', '-4', 'route', 'show', 'table', 'all'], ['ip', '-6', 'route', 'show', 'table', 'all'], ['ip', '-d', 'link', 'show'],
  ],
  'iptables-rules.txt': [
    // Both back ends, as Retina: a node may have rules in either (kube-proxy picks one).
    ['iptables-nft-save', '-c'], ['ip6tables-nft-save', '-c'], ['iptables-legacy-save', '-c'], ['ip6tables-legacy-save', '-c'],
    ['iptables', '-w', '5', '-vnx', '-L', '-t', 'filter'], ['iptables', '-w', '5', '-vnx', '-L', '-t', 'nat'], ['iptables', '-w', '5', '-vnx', '-L', '-t', 'mangle'],
  ],
  'nftables.txt': [['nft', 'list', 'ruleset']],
  'socket-stats.txt': [['ss', '-s'], ['ss', '-tapionume']],
};

export interface LinuxMetadataOptions {
  readonly procNet?: string;
  readonly procSysNet?: string;
  readonly limits?: CopyLimits;
}

export async function collectLinuxMetadata(dir: string, log: Logger, opts: LinuxMetadataOptions = {}): Promise<void> {
  for (const [file, cmds] of Object.entries(METADATA_FILES)) {
    const parts: string[] = [];
    for (const cmd of cmds) {
      const [bin, ...args] = cmd;
      const r = await runTool(bin, args, { timeoutMs: 20_000, maxBytes: 32 << 20 });
      parts.push(`### ${cmd.join(' ')}\n${r.stdout}${r.error ? `# failed: ${r.error}${r.stderr ? `: ${r.stderr.trim().slice(0, 500)}` : ''}\n` : ''}`);
      if (r.error) log.warn('metadata command failed', { command: cmd.join(' '), error: r.error });
    }
    await writeFile(join(dir, file), parts.join('\n'));
  }
  for (const [src, name] of [[opts.procNet ?? '/proc/self/net', 'proc-net'], [opts.procSysNet ?? '/proc/sys/net', 'proc-sys-net']] as const) {
    const r = await copyTree(src, join(dir, name), opts.limits ?? PROC_LIMITS);
    log.info('copied', { from: src, ...r });
  }
}
