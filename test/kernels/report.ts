/**
 * What the kernel matrix's suite (suite.ts) reports from one kernel, and how the matrix turns the
 * reports into docs/kernels.md's table and bench/kernels/verifier.json (matrix.test.ts).
 */

/** Every program of every object the plugins load (the verifier budget covers them all, chosen or not). */
export const OBJECTS: Readonly<Record<string, readonly string[]>> = {
  packetforward: ['packetforward_ingress', 'packetforward_egress'],
  dropreason: ['dropreason_kfree_skb', 'dropreason_kfree_skb_noreason'],
  dns: ['dns_socket_filter', 'retina_dns_egress'],
  tcpretrans: ['tcpretrans_tp', 'tcpretrans_tp_err'],
  packetparser: [
    'packetparser_endpoint_ingress', 'packetparser_endpoint_egress', 'packetparser_host_ingress', 'packetparser_host_egress',
    'packetparser_endpoint_ingress_ct', 'packetparser_endpoint_egress_ct', 'packetparser_host_ingress_ct', 'packetparser_host_egress_ct',
    'packetparser_sweep', 'packetparser_sweep_keys',
  ],
};

/** One plugin as the agent started it on this kernel. */
export interface PluginRow {
  loaded: boolean;
  /** The hook(s) it attached: tp_btf/kfree_skb, tc/ingress tc/egress, socket_filter/... */
  hook?: string;
  program?: string;
  /** tc: tcx or clsact. */
  mode?: string;
  /** dropreason: kernel or fallback. */
  reasons?: string;
  /** packetparser: the connection-table sweep program. */
  sweep?: string;
  error?: string;
}

/** One program loaded alone, with the verifier's statistics (BPF_LOG_STATS). */
export interface ProgramRow {
  readonly object: string;
  readonly program: string;
  accepted: boolean;
  insns?: number;
  totalStates?: number;
  peakStates?: number;
  verificationUs?: number;
  loadMs?: number;
  refused?: string;
}

export interface KernelReport {
  readonly release: string;
  readonly plugins: Record<string, PluginRow>;
  readonly programs: ProgramRow[];
  /** What each check counted against the kernel's own counter, "ours/theirs". */
  readonly counts: Record<string, string>;
}

/** One column of the matrix: a kernel's name (5.10, 6.1, ..., "host") and its report. */
export interface Column {
  readonly name: string;
  readonly report: KernelReport;
}

const PLUGINS = ['packetforward', 'dropreason', 'dns', 'tcpretrans', 'packetparser', 'linuxutil'] as const;

/** A plugin's cell: hook, program and mode as one short text. */
export function cell(row: PluginRow | undefined): string {
  if (!row) return 'not run';
  if (!row.loaded) return `**fails**: ${row.error ?? 'not started'}`;
  if (!row.hook) return 'started (no eBPF)';
  const parts = [`\`${row.hook}\``];
  if (row.program) parts.push(`\`${row.program}\``);
  if (row.mode) parts.push(row.mode);
  if (row.reasons) parts.push(`reasons: ${row.reasons}`);
  if (row.sweep) parts.push(`sweep: \`${row.sweep}\``);
  return parts.join(', ');
}

/** docs/kernels.md's generated table: one row per plugin, one column per kernel. */
export function pluginTable(columns: readonly Column[]): string {
  const head = `| plugin | ${columns.map((c) => `${c.name} (\`${c.report.release}\`)`).join(' | ')} |`;
  const sep = `| --- | ${columns.map(() => '---').join(' | ')} |`;
  const rows = PLUGINS.map((p) => `| \`${p}\` | ${columns.map((c) => cell(c.report.plugins[p])).join(' | ')} |`);
  const counts = [...new Set(columns.flatMap((c) => Object.keys(c.report.counts)))].sort();
  const countRows = counts.map((k) => `| ${k} | ${columns.map((c) => c.report.counts[k] ?? '—').join(' | ')} |`);
  return [head, sep, ...rows, `| **counted / the kernel's counter** | ${columns.map(() => '').join(' | ')} |`, ...countRows].join('\n');
}

/** The verifier budget: instructions processed per program per kernel (refused: why). */
export function verifierTable(columns: readonly Column[]): string {
  const head = `| program | ${columns.map((c) => c.name).join(' | ')} |`;
  const sep = `| --- | ${columns.map(() => '---:').join(' | ')} |`;
  const rows = Object.entries(OBJECTS).flatMap(([, programs]) =>
    programs.map((p) => `| \`${p}\` | ${columns.map((c) => budget(c.report.programs.find((r) => r.program === p))).join(' | ')} |`),
  );
  return [head, sep, ...rows].join('\n');
}

function budget(r: ProgramRow | undefined): string {
  if (!r) return '—';
  if (!r.accepted) return `refused: ${shortReason(r.refused ?? '')}`;
  return r.insns === undefined ? 'accepted' : `${r.insns} insns, ${r.totalStates} states`;
}

/** The verifier's or libbpf's words, cut to what a table cell holds, with what they mean where we know it. */
export function shortReason(text: string): string {
  const words = text.replace(/^cannot load BPF object \w+: the verifier refused program \w+: /, '').replace(/\s+/g, ' ').replace(/\|/g, '/');
  const arg = /func '(\w+)' doesn't have (\d+)-th argument/.exec(words);
  if (arg) return `${arg[1]} has no ${arg[2]}-th argument on this kernel`;
  if (/call bpf_unspec#0/.test(words)) return 'no conntrack kfuncs (a weak kfunc libbpf could not resolve)';
  if (/number of funcs in func_info doesn't match number of subprogs/.test(words)) return 'no bpf_for_each_map_elem (its callback is a subprogram this kernel refuses)';
  const unknownFunc = /unknown func (\w+)/.exec(words) ?? /invalid func unknown#?(\w+)/.exec(words);
  if (unknownFunc) return `helper ${unknownFunc[1]} unknown to this kernel`;
  return words.slice(0, 120);
}

/**
 * Where a guest's time went: its suite's tests, the slowest first, and the phases a case printed
 * (`ℹ ... phases: ...`), from the suite's output (run.log).
 */
export function guestTimes(name: string, log: string): string[] {
  const times = [...log.matchAll(/^[✔✖] (.{1,40}).*? \((\d+(?:\.\d+)?)ms\)$/gmu)].map((x) => [Number(x[2]) / 1000, x[1] as string] as const);
  return [
    `${name} per test: ${times.sort((a, b) => b[0] - a[0]).map(([sec, t]) => `${sec.toFixed(1)} s ${t.trim()}`).join('; ')}`,
    ...[...log.matchAll(/^ℹ (.{1,60} phases: .*)$/gmu)].map((x) => `${name} ${x[1]}`),
  ];
}

