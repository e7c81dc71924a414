/**
 * The bpftrace program of `kubectl retina bpftrace` (Retina's shell/tracescript.go), written for the
 * node's kernel: the tracepoints' fields are read from their format files first (tcp_send_reset changed
 * shape in 6.10: a sockaddr pair instead of family/ports/addresses), drop and RST reason names from the
 * formats' symbol tables, and the address of nf_queue from kallsyms. IPv4 and IPv6 alike (Retina: IPv4
 * only). Tracepoints only: no kprobe, kfunc or fexit (Retina's NFQUEUE probe is fexit:__nf_queue): an
 * NFQUEUE drop is the kfree_skb whose location lies in nf_queue(), which frees the packet when no
 * program listens on the queue. The --ip/--cidr filter runs in the kernel, on 32-bit words compared
 * under masks. Pure: text in, text out. Each event is one line `E TYPE NS CODE CODE2 FAMILY L4 SPORT DPORT
 * S0..S3 D0..D3 EXTRA` that trace-events.ts decodes (addresses as the 32-bit words of memory, little-endian).
 */
import { isIP } from 'node:net';

export type TraceKind = 'drops' | 'rst' | 'errors' | 'retransmits' | 'nfqueue';
export const TRACE_KINDS: readonly TraceKind[] = ['drops', 'rst', 'errors', 'retransmits', 'nfqueue'];

/** The tracepoints the program may use, as `<system>/<event>` under events/. */
export const TRACEPOINTS = ['skb/kfree_skb', 'tcp/tcp_send_reset', 'tcp/tcp_receive_reset', 'sock/inet_sk_error_report', 'tcp/tcp_retransmit_skb'] as const;
export type Tracepoint = (typeof TRACEPOINTS)[number];

export interface TracepointFormat {
  /** field name -> its declared size in bytes */
  readonly fields: ReadonlyMap<string, number>;
  /** __print_symbolic(REC->reason, ...)'s numeric entries */
  readonly reasons: ReadonlyMap<number, string>;
}

export interface KernelFacts {
  readonly formats: ReadonlyMap<Tracepoint, TracepointFormat>;
  /** nf_queue's address range [start, end) from kallsyms; undefined when hidden (kptr_restrict) or absent. */
  readonly nfQueue?: { readonly start: bigint; readonly end: bigint };
}

/** One address filter: 1 (IPv4) or 4 (IPv6) words of value and mask, as the words of memory. */
export interface AddressFilter {
  readonly family: 4 | 6;
  readonly words: readonly { readonly value: number; readonly mask: number }[];
  readonly text: string;
}

/** The shell command whose output `parseKernelFacts` reads: every format, and nf_queue's range. */
export const KERNEL_FACTS_SCRIPT = `for e in ${TRACEPOINTS.join(' ')}; do echo "=== $e"; cat /sys/kernel/tracing/events/$e/format 2>/dev/null; done; ` +
  `echo "=== kallsyms"; awk 'f && $1 != a { print a, $1; exit } $3 == "nf_queue" && $2 ~ /^[Tt]$/ { a = $1; f = 1 }' /proc/kallsyms`;

export function parseFormat(text: string): TracepointFormat {
  const fields = new Map<string, number>();
  for (const m of text.matchAll(/field:([^;]*?)\s+([A-Za-z_]\w*)(?:\[\d*\])?;\s*offset:\d+;\s*size:(\d+);/g)) fields.set(m[2] as string, Number(m[3]));
  const reasons = new Map<number, string>();
  const at = text.indexOf('__print_symbolic(REC->reason');
  if (at >= 0) {
    const end = text.indexOf('__print_symbolic(', at + 10);
    for (const m of text.slice(at, end < 0 ? undefined : end).matchAll(/\{\s*(\d+),\s*"([^"]+)"\s*\}/g)) reasons.set(Number(m[1]), m[2] as string);
  }
  return { fields, reasons };
}

export function parseKernelFacts(output: string): KernelFacts {
  const formats = new Map<Tracepoint, TracepointFormat>();
  let nfQueue: KernelFacts['nfQueue'];
  for (const part of output.split(/^=== /m).slice(1)) {
    const nl = part.indexOf('\n');
    const name = (nl < 0 ? part : part.slice(0, nl)).trim();
    const body = nl < 0 ? '' : part.slice(nl + 1);
    if (name === 'kallsyms') {
      const m = /^([0-9a-f]+)\s+([0-9a-f]+)/m.exec(body);
      if (m && BigInt(`0x${m[1]}`) !== 0n) nfQueue = { start: BigInt(`0x${m[1]}`), end: BigInt(`0x${m[2]}`) };
    } else if ((TRACEPOINTS as readonly string[]).includes(name) && body.includes('field:')) {
      formats.set(name as Tracepoint, parseFormat(body));
    }
  }
  return { formats, ...(nfQueue ? { nfQueue } : {}) };
}

/** An IP or a CIDR as a filter; an error naming the flag and the value when it is neither. */
export function addressFilter(flag: '--ip' | '--cidr', text: string): AddressFilter {
  const [addr = '', len, ...rest] = text.trim().split('/');
  const family = isIP(addr);
  const bits = family === 4 ? 32 : 128;
  if (!family || rest.length || (flag === '--ip' && len !== undefined) || (flag === '--cidr' && (len === undefined || !/^\d+$/.test(len) || Number(len) > bits))) {
    throw new Error(`${flag}: ${JSON.stringify(text)} is not ${flag === '--ip' ? 'an IPv4 or IPv6 address' : 'a CIDR (10.244.0.0/16, fd00::/64)'}`);
  }
  const prefix = len === undefined ? bits : Number(len);
  const bytes = family === 4 ? addr.split('.').map(Number) : ipv6Bytes(addr);
  const words: { value: number; mask: number }[] = [];
  for (let w = 0; w < bytes.length / 4; w++) {
    let value = 0;
    let mask = 0;
    for (let b = 0; b < 4; b++) {
      const i = w * 4 + b;
      const keep = Math.max(0, Math.min(8, prefix - i * 8));
      const m = keep === 0 ? 0 : (0xff << (8 - keep)) & 0xff;
      // little-endian: byte i of the address is bits 8*b of the word as read from memory
      value += ((bytes[i] as number) & m) * 2 ** (8 * b);
      mask += m * 2 ** (8 * b);
    }
    words.push({ value, mask });
  }
  return { family: family === 4 ? 4 : 6, words, text: text.trim() };
}

function ipv6Bytes(addr: string): number[] {
  // expand :: and a trailing dotted IPv4
  let a = addr;
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  if (v4) {
    const p = (v4[1] as string).split('.').map(Number);
    a = a.slice(0, -(v4[1] as string).length) + `${(((p[0] as number) << 8) | (p[1] as number)).toString(16)}:${(((p[2] as number) << 8) | (p[3] as number)).toString(16)}`;
  }
  const [head = '', tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const t = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  return groups.flatMap((g) => [parseInt(g, 16) >> 8, parseInt(g, 16) & 0xff]);
}

export interface ScriptOptions {
  readonly kinds: ReadonlySet<TraceKind>;
  readonly filters: readonly AddressFilter[];
  /** Seconds after which the program exits on its own (0: until stopped). */
  readonly durationSeconds: number;
}

export interface TraceScript {
  readonly text: string;
  /** What could not be traced on this kernel, and why. */
  readonly notes: readonly string[];
}

const ZERO = ['$s0', '$s1', '$s2', '$s3', '$d0', '$d1', '$d2', '$d3', '$sp', '$dp', '$l4', '$fam', '$code', '$code2'].map((v) => `  ${v} = (uint64)0;`).join('\n');
const hex = (n: number): string => `0x${n.toString(16)}`;
/** The little-endian 32-bit word of a u8 array field at byte `at`. */
const word = (f: string, at: number): string => `((uint64)${f}[${at}] | ((uint64)${f}[${at + 1}] << 8) | ((uint64)${f}[${at + 2}] << 16) | ((uint64)${f}[${at + 3}] << 24))`;

function filterCondition(filters: readonly AddressFilter[]): string {
  const one = (f: AddressFilter, side: 's' | 'd'): string =>
    f.words.map((w, i) => (w.mask === 0 ? '' : `($${side}${i} & ${hex(w.mask)}) == ${hex(w.value)}`)).filter(Boolean).join(' && ') || '1';
  return filters.map((f) => `($fam == ${f.family === 4 ? 2 : 10} && ((${one(f, 's')}) || (${one(f, 'd')})))`).join(' || ');
}

/** The event line's printf (the type a literal: bpftrace 0.17 prints no string variable set in two branches). */
const printLine = (type: string, extra: string): string =>
  `printf("E ${type} %llu %llu %llu %llu %llu %llu %llu %llx %llx %llx %llx %llx %llx %llx %llx %s\\n", nsecs, $code, $code2, $fam, $l4, $sp, $dp, $s0, $s1, $s2, $s3, $d0, $d1, $d2, $d3, ${extra})`;

function emit(type: string, filters: readonly AddressFilter[]): string {
  const cond = filters.length ? `  if (!(${filterCondition(filters)})) { return; }\n` : '';
  return `${cond}  ${printLine(type, '"-"')};\n}\n`;
}

/** Family, ports and addresses from a tracepoint with family/sport/dport/saddr[4]/saddr_v6[16] fields. */
function fromSockFields(): string {
  return `  $fam = (uint64)args->family; $sp = (uint64)args->sport; $dp = (uint64)args->dport;
  if ($fam == 2) { $s0 = ${word('args->saddr', 0)}; $d0 = ${word('args->daddr', 0)}; }
  if ($fam == 10) {
    $s0 = ${word('args->saddr_v6', 0)}; $s1 = ${word('args->saddr_v6', 4)}; $s2 = ${word('args->saddr_v6', 8)}; $s3 = ${word('args->saddr_v6', 12)};
    $d0 = ${word('args->daddr_v6', 0)}; $d1 = ${word('args->daddr_v6', 4)}; $d2 = ${word('args->daddr_v6', 8)}; $d3 = ${word('args->daddr_v6', 12)};
  }
  if ($fam != 2 && $fam != 10) { return; }
`;
}

/** The same from saddr/daddr holding a struct sockaddr_in or sockaddr_in6 (tcp_send_reset since 6.10). */
function fromSockaddrs(): string {
  return `  $fam = (uint64)args->saddr[0] | ((uint64)args->saddr[1] << 8);
  $sp = ((uint64)args->saddr[2] << 8) | (uint64)args->saddr[3]; $dp = ((uint64)args->daddr[2] << 8) | (uint64)args->daddr[3];
  if ($fam == 2) { $s0 = ${word('args->saddr', 4)}; $d0 = ${word('args->daddr', 4)}; }
  if ($fam == 10) {
    $s0 = ${word('args->saddr', 8)}; $s1 = ${word('args->saddr', 12)}; $s2 = ${word('args->saddr', 16)}; $s3 = ${word('args->saddr', 20)};
    $d0 = ${word('args->daddr', 8)}; $d1 = ${word('args->daddr', 12)}; $d2 = ${word('args->daddr', 16)}; $d3 = ${word('args->daddr', 20)};
  }
  if ($fam != 2 && $fam != 10) { return; }
`;
}

const SOCK_FIELDS = ['family', 'sport', 'dport', 'saddr', 'daddr', 'saddr_v6', 'daddr_v6'];
const hasAll = (f: TracepointFormat | undefined, names: readonly string[]): boolean => Boolean(f && names.every((n) => f.fields.has(n)));

/** The kfree_skb probe: drops (named reasons, not NOT_SPECIFIED) and, with nfqueue, NOT_SPECIFIED frees inside nf_queue(). */
function dropProbe(f: TracepointFormat, o: ScriptOptions, facts: KernelFacts, notes: string[]): string {
  const code = (name: string): number | undefined => [...f.reasons].find(([, n]) => n === name)?.[0];
  const quiet = ['NOT_DROPPED_YET', 'CONSUMED', 'NOT_SPECIFIED'].map(code).filter((c): c is number => c !== undefined);
  const notSpecified = code('NOT_SPECIFIED');
  const drops = o.kinds.has('drops');
  let nfq = o.kinds.has('nfqueue');
  if (nfq && (!facts.nfQueue || notSpecified === undefined)) {
    notes.push(`--nfqueue-drops: ${facts.nfQueue ? 'the kernel names no NOT_SPECIFIED drop reason' : 'nf_queue is not in /proc/kallsyms (hidden by kernel.kptr_restrict, or netfilter queueing not built)'}; NFQUEUE drops are not traced`);
    nfq = false;
  }
  if (!drops && !nfq) return '';
  if (!f.fields.has('reason')) notes.push('kfree_skb has no drop reason on this kernel (before 5.17): every freed packet would count; drops are not traced');
  if (!f.fields.has('reason')) return '';
  const lines = ['tracepoint:skb:kfree_skb', '{', ZERO, '  $t = (uint64)0;', '  $r = (uint64)args->reason;'];
  if (nfq && facts.nfQueue) {
    lines.push(`  if ($r == ${notSpecified as number}) {`,
      `    if ((uint64)args->location < (uint64)0x${facts.nfQueue.start.toString(16)} || (uint64)args->location >= (uint64)0x${facts.nfQueue.end.toString(16)}) { return; }`,
      '    $t = (uint64)1;', '  }');
  }
  if (!drops) lines.push('  if ($t == 0) { return; }');
  else if (quiet.length) lines.push(`  if ($t == 0 && (${quiet.map((c) => `$r == ${c}`).join(' || ')})) { return; }`);
  lines.push('  $code = $r;',
    '  $p = (uint64)args->protocol;',
    '  if ($p != 0x0800 && $p != 0x86dd) { return; }',
    '  $skb = (struct sk_buff *)args->skbaddr;',
    '  $nh = $skb->head + $skb->network_header;',
    '  $th = $nh;',
    '  if ($p == 0x0800) {',
    '    $fam = (uint64)2; $s0 = (uint64)*(uint32 *)($nh + 12); $d0 = (uint64)*(uint32 *)($nh + 16);',
    '    $l4 = (uint64)*(uint8 *)($nh + 9); $th = $nh + ((uint64)*(uint8 *)$nh & 0xf) * 4;',
    '  } else {',
    '    $fam = (uint64)10; $l4 = (uint64)*(uint8 *)($nh + 6); $th = $nh + 40;',
    '    $s0 = (uint64)*(uint32 *)($nh + 8); $s1 = (uint64)*(uint32 *)($nh + 12); $s2 = (uint64)*(uint32 *)($nh + 16); $s3 = (uint64)*(uint32 *)($nh + 20);',
    '    $d0 = (uint64)*(uint32 *)($nh + 24); $d1 = (uint64)*(uint32 *)($nh + 28); $d2 = (uint64)*(uint32 *)($nh + 32); $d3 = (uint64)*(uint32 *)($nh + 36);',
    '  }',
    '  if ($l4 == 6 || $l4 == 17) {',
    '    $a = (uint64)*(uint16 *)$th; $b = (uint64)*(uint16 *)($th + 2);',
    '    $sp = (($a & 0xff) << 8) | ($a >> 8); $dp = (($b & 0xff) << 8) | ($b >> 8);',
    '  }');
  const body = lines.join('\n') + '\n';
  const cond = o.filters.length ? `  if (!(${filterCondition(o.filters)})) { return; }\n` : '';
  return `${body}${cond}  if ($t == 1) { ${printLine('NFQ_DROP', 'ksym(args->location)')}; } else { ${printLine('DROP', 'ksym(args->location)')}; }\n}\n`;
}

export function traceScript(facts: KernelFacts, o: ScriptOptions): TraceScript {
  const notes: string[] = [];
  const parts: string[] = ['BEGIN { printf("S %llu\\n", nsecs); }\n'];
  const fmt = (t: Tracepoint): TracepointFormat | undefined => {
    const f = facts.formats.get(t);
    if (!f) notes.push(`tracepoint ${t.replace('/', ':')} is not on this kernel`);
    return f;
  };
  if (o.kinds.has('drops') || o.kinds.has('nfqueue')) {
    const f = fmt('skb/kfree_skb');
    if (f) parts.push(dropProbe(f, o, facts, notes));
  }
  if (o.kinds.has('rst')) {
    const sent = fmt('tcp/tcp_send_reset');
    if (sent) {
      const codes = (sent.fields.has('reason') ? '  $code = (uint64)args->reason;\n' : '') + (sent.fields.has('state') ? '  $code2 = (uint64)args->state;\n' : '');
      if (hasAll(sent, SOCK_FIELDS)) parts.push(`tracepoint:tcp:tcp_send_reset\n{\n${ZERO}\n${fromSockFields()}${codes}  $l4 = (uint64)6;\n${emit('RST_SENT', o.filters)}`);
      else if ((sent.fields.get('saddr') ?? 0) >= 28) parts.push(`tracepoint:tcp:tcp_send_reset\n{\n${ZERO}\n${fromSockaddrs()}${codes}  $l4 = (uint64)6;\n${emit('RST_SENT', o.filters)}`);
      else notes.push('tcp:tcp_send_reset has fields this program does not know; RSTs sent are not traced');
    }
    const recv = fmt('tcp/tcp_receive_reset');
    if (recv && hasAll(recv, SOCK_FIELDS)) parts.push(`tracepoint:tcp:tcp_receive_reset\n{\n${ZERO}\n${fromSockFields()}  $l4 = (uint64)6;\n${emit('RST_RECV', o.filters)}`);
  }
  if (o.kinds.has('errors')) {
    const f = fmt('sock/inet_sk_error_report');
    if (f && hasAll(f, [...SOCK_FIELDS, 'error'])) {
      const l4 = f.fields.has('protocol') ? '  $l4 = (uint64)args->protocol;\n' : '';
      parts.push(`tracepoint:sock:inet_sk_error_report\n{\n${ZERO}\n  if (args->error == 0) { return; }\n  $code = (uint64)args->error;\n${fromSockFields()}${l4}${emit('SOCK_ERR', o.filters)}`);
    }
  }
  if (o.kinds.has('retransmits')) {
    const f = fmt('tcp/tcp_retransmit_skb');
    if (f && hasAll(f, [...SOCK_FIELDS, 'state'])) parts.push(`tracepoint:tcp:tcp_retransmit_skb\n{\n${ZERO}\n  $code = (uint64)args->state;\n${fromSockFields()}  $l4 = (uint64)6;\n${emit('RETRANS', o.filters)}`);
  }
  if (o.durationSeconds > 0) parts.push(`interval:s:${o.durationSeconds} { exit(); }\n`);
  parts.push('END { printf("Z\\n"); }\n');
  return { text: parts.join('\n'), notes };
}
