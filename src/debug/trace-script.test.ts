import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TraceDecoder, tableRow } from './trace-events.js';
import { TRACE_KINDS, addressFilter, parseKernelFacts, traceScript, type TraceKind } from './trace-script.js';

const field = (decl: string, size: number): string => `\tfield:${decl};\toffset:0;\tsize:${size};\tsigned:0;`;
const sockFields = [field('__u16 sport', 2), field('__u16 dport', 2), field('__u16 family', 2), field('__u8 saddr[4]', 4), field('__u8 daddr[4]', 4),
  field('__u8 saddr_v6[16]', 16), field('__u8 daddr_v6[16]', 16)].join('\n');
/** The kernel's answer to KERNEL_FACTS_SCRIPT: 6.10+ (tcp_send_reset with sockaddrs and reasons) or older. */
function facts(newReset: boolean, kallsyms = 'ffffffff81f2d170 ffffffff81f2d540'): string {
  return [
    '=== skb/kfree_skb', field('void * skbaddr', 8), field('void * location', 8), field('unsigned short protocol', 2), field('enum skb_drop_reason reason', 4),
    'print fmt: "reason: %s", __print_symbolic(REC->reason, { 0, "NOT_DROPPED_YET" }, { 1, "CONSUMED" }, { 2, "NOT_SPECIFIED" }, { 3, "NO_SOCKET" }, { 12, "NETFILTER_DROP" })',
    '=== tcp/tcp_send_reset',
    ...(newReset
      ? [field('int state', 4), field('enum sk_rst_reason reason', 4), field('__u8 saddr[28]', 28), field('__u8 daddr[28]', 28),
        'print fmt: "x", REC->state ? __print_symbolic(REC->state, { TCP_ESTABLISHED, "TCP_ESTABLISHED" }) : "UNKNOWN", __print_symbolic(REC->reason, { 0, "NOT_SPECIFIED" }, { 1, "NO_SOCKET" })']
      : [sockFields]),
    '=== tcp/tcp_receive_reset', sockFields,
    '=== sock/inet_sk_error_report', field('int error', 4), sockFields, field('__u16 protocol', 2),
    '=== tcp/tcp_retransmit_skb', field('int state', 4), sockFields,
    '=== kallsyms', kallsyms, '',
  ].join('\n');
}
const all = new Set<TraceKind>(TRACE_KINDS);

test('the kernel facts: fields, reason names, nf_queue\'s range', () => {
  const f = parseKernelFacts(facts(true));
  assert.equal(f.formats.size, 5);
  assert.equal(f.formats.get('skb/kfree_skb')?.reasons.get(12), 'NETFILTER_DROP');
  assert.equal(f.formats.get('tcp/tcp_send_reset')?.reasons.get(1), 'NO_SOCKET');
  assert.equal(f.formats.get('tcp/tcp_send_reset')?.fields.get('saddr'), 28);
  assert.deepEqual(f.nfQueue, { start: 0xffffffff81f2d170n, end: 0xffffffff81f2d540n });
  assert.equal(parseKernelFacts(facts(true, '0000000000000000 0000000000000000')).nfQueue, undefined, 'kptr_restrict hides it');
});

test('the program follows the kernel: tcp_send_reset from sockaddrs (6.10+) or from its family fields; quiet reasons skipped; NFQUEUE by location', () => {
  const neu = traceScript(parseKernelFacts(facts(true)), { kinds: all, filters: [], durationSeconds: 5 });
  assert.deepEqual(neu.notes, []);
  assert.match(neu.text, /tracepoint:tcp:tcp_send_reset\n\{[^}]*\$fam = \(uint64\)args->saddr\[0\] \| \(\(uint64\)args->saddr\[1\] << 8\)/);
  assert.match(neu.text, /\$code = \(uint64\)args->reason;/);
  assert.match(neu.text, /if \(\$t == 0 && \(\$r == 0 \|\| \$r == 1 \|\| \$r == 2\)\) \{ return; \}/);
  assert.match(neu.text, /\(uint64\)args->location < \(uint64\)0xffffffff81f2d170 \|\| \(uint64\)args->location >= \(uint64\)0xffffffff81f2d540/);
  assert.match(neu.text, /interval:s:5 \{ exit\(\); \}/);
  assert.doesNotMatch(neu.text, /kprobe|kfunc|fentry|fexit/);
  const old = traceScript(parseKernelFacts(facts(false)), { kinds: new Set(['rst']), filters: [], durationSeconds: 0 });
  assert.match(old.text, /tracepoint:tcp:tcp_send_reset\n\{[^}]*\$fam = \(uint64\)args->family;/);
  assert.doesNotMatch(old.text, /kfree_skb|interval/);
  const hidden = traceScript(parseKernelFacts(facts(true, '0000000000000000 0000000000000000')), { kinds: new Set(['nfqueue']), filters: [], durationSeconds: 0 });
  assert.match(hidden.notes.join(), /--nfqueue-drops: nf_queue is not in \/proc\/kallsyms/);
  assert.doesNotMatch(hidden.text, /kfree_skb/);
});

test('filters: little-endian words under masks, IPv4 and IPv6, source or destination', () => {
  assert.deepEqual(addressFilter('--ip', '10.244.1.15').words, [{ value: 0x0f01f40a, mask: 0xffffffff }]);
  assert.deepEqual(addressFilter('--cidr', '10.244.0.0/16').words, [{ value: 0x0000f40a, mask: 0x0000ffff }]);
  assert.deepEqual(addressFilter('--cidr', '10.244.128.0/17').words, [{ value: 0x0080f40a, mask: 0x0080ffff }]);
  assert.deepEqual(addressFilter('--cidr', 'fd51:251::/64').words, [{ value: 0x510251fd, mask: 0xffffffff }, { value: 0, mask: 0xffffffff }, { value: 0, mask: 0 }, { value: 0, mask: 0 }]);
  assert.deepEqual(addressFilter('--ip', '::ffff:10.0.0.1').words.at(-1), { value: 0x0100000a, mask: 0xffffffff });
  const s = traceScript(parseKernelFacts(facts(true)), { kinds: new Set(['retransmits']), filters: [addressFilter('--ip', '10.0.0.1'), addressFilter('--cidr', 'fd51:251::/64')], durationSeconds: 0 });
  assert.match(s.text, /if \(!\(\(\$fam == 2 && \(\(\(\$s0 & 0xffffffff\) == 0x100000a\) \|\| \(\(\$d0 & 0xffffffff\) == 0x100000a\)\)\) \|\| \(\$fam == 10 && \(\(\(\$s0 & 0xffffffff\) == 0x510251fd && \(\$s1 & 0xffffffff\) == 0x0\) \|\| /);
});

test('events decoded: names from the kernel, addresses in both families, Retina\'s keys, a table row', () => {
  const d = new TraceDecoder(parseKernelFacts(facts(true)));
  assert.equal(d.decode('S 1000000000', 1_700_000_000_000), 'start');
  const drop = d.decode('E DROP 1250000000 12 0 2 6 40300 39700 f01f40a 0 0 0 1001f40a 0 0 0 nft_do_chain+0x4a1');
  assert.deepEqual(drop, {
    time: new Date(1_700_000_000_250).toISOString(), type: 'DROP', probe: 'kfree_skb', family: 'IPv4', protocol: 'TCP',
    src_ip: '10.244.1.15', src_port: 40300, dst_ip: '10.244.1.16', dst_port: 39700, reason_code: 12, reason: 'NETFILTER_DROP', location: 'nft_do_chain',
  });
  const rst = d.decode('E RST_SENT 2000000000 1 0 10 6 39701 52578 510251fd 0 0 5000000 510251fd 0 0 6000000 -');
  assert.equal(typeof rst === 'object' && rst.src_ip, 'fd51:251::5');
  assert.equal(typeof rst === 'object' && rst.reason, 'NO_SOCKET');
  assert.equal(typeof rst === 'object' && rst.tcp_state, undefined, 'no socket, no state');
  const err = d.decode('E SOCK_ERR 2000000000 111 0 2 6 1 2 100007f 0 0 0 100007f 0 0 0 -');
  assert.equal(typeof err === 'object' && err.error, 'ECONNREFUSED');
  const re = d.decode('E RETRANS 2000000000 2 0 2 6 1 2 100007f 0 0 0 100007f 0 0 0 -');
  assert.equal(typeof re === 'object' && re.state, 'SYN_SENT');
  assert.equal(d.decode('Z'), 'end');
  assert.equal(d.decode('Lost 3 events'), undefined);
  assert.match(tableRow(drop as Exclude<typeof drop, string | undefined>), /DROP\s+NETFILTER_DROP\s+-\s+kfree_skb\s+10\.244\.1\.15:40300 -> 10\.244\.1\.16:39700 TCP \(nft_do_chain\)/);
  assert.match(tableRow(rst as Exclude<typeof rst, string | undefined>), /\[fd51:251::5\]:39701 -> \[fd51:251::6\]:52578/);
});
