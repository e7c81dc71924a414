/**
 * Chaos: the node's special file systems absent. The agent runs in its own network namespace and a
 * private mount namespace (`ip netns exec` gives one) where /sys/fs/bpf, /sys/kernel/tracing and
 * /sys/kernel/debug are empty tmpfs mounts.
 * - Without bpffs and tracefs, nothing needs them: the agent pins nothing, attaches tracepoints as
 *   tp_btf (found through BTF, not tracefs), and tc/socket filters through netlink and sockets. Every
 *   plugin runs and counts real traffic (packetforward on the veth), and /readyz is ready.
 * - With /sys/kernel/btf hidden as well, the eBPF plugins cannot load (CO-RE needs kernel BTF): each
 *   fails alone, with a log line naming the plugin and the missing file; linuxutil keeps serving its
 *   metrics, and /readyz (503) lists every failed plugin with its reason.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { AGENT_BIN } from '../e2e/agent-process.js';
import { Netns, NsAgent, metric, requireKernel, stopAll, vethPair } from '../ebpf/netns.js';
import { UDP_SEND, UDP_SINK } from '../ebpf/traffic.js';

const EXT = 'ch-ext';
const EBPF = ['packetforward', 'dropreason', 'dns', 'tcpretrans', 'packetparser'];
const ALL = [...EBPF, 'linuxutil'];
const CONFIG = `enabledPlugin: [${ALL.join(', ')}]\nenablePodLevel: true\nmetricsIntervalDuration: 300ms\npacketForwardInterfaces: [${EXT}]\npacketParserHostInterfaces: [${EXT}]\n`;

let node: Netns | undefined;
let peer: Netns | undefined;
const sinks: ChildProcess[] = [];

/** The agent behind empty tmpfs mounts over `hidden`; the shell first prints what it sees there. */
function hiddenAgent(hidden: readonly string[]): NsAgent {
  const script = [
    'set -e',
    ...hidden.map((p) => `mount -t tmpfs -o size=4k chaos-empty ${p}`),
    ...hidden.map((p) => `echo "${p}: $(stat -f -c %T ${p}) $(ls -A ${p} | wc -l)"`),
    'exec "$@"',
  ].join('\n');
  return new NsAgent(node as Netns, CONFIG, ['sh', '-c', script, 'sh', AGENT_BIN]);
}

before(async () => {
  requireKernel();
  node = new Netns('ch-nofs-node');
  peer = new Netns('ch-nofs-peer');
  vethPair(node, EXT, '10.231.7.1', peer, 'ch-ext-p', '10.231.7.2');
  sinks.push(await node.spawnReady(UDP_SINK, ['10.231.7.1', '7000']));
});

after(async () => {
  await stopAll(sinks);
  node?.destroy();
  peer?.destroy();
});

test('without /sys/fs/bpf and tracefs every plugin runs and counts traffic', { timeout: 90_000 }, async () => {
  const hidden = ['/sys/fs/bpf', '/sys/kernel/tracing', '/sys/kernel/debug'];
  await using agent = hiddenAgent(hidden);
  await agent.started(ALL);
  for (const p of hidden) assert.match(agent.proc.stdout, new RegExp(`${p}: tmpfs 0\\n`), `${p} is an empty tmpfs for the agent`);
  const r = agent.readyz();
  assert.equal(r.status, 'ready', JSON.stringify(r));
  for (const p of ALL) assert.equal(r.plugins.find((x) => x.name === p)?.state, 'running', `${p}: ${JSON.stringify(r)}`);
  const before = metric(agent.metrics(), 'networkobservability_forward_count', { direction: 'ingress' });
  await (peer as Netns).node(UDP_SEND, ['200', '10.231.7.1', '7000', '64']);
  await agent.until(() => (metric(agent.metrics(), 'networkobservability_forward_count', { direction: 'ingress' }) - before >= 200 ? true : undefined), 'packetforward counting the 200 datagrams');
  assert.ok(agent.metrics().includes('networkobservability_tcp_state'), 'linuxutil serves');
});

test('without kernel BTF too, the eBPF plugins fail alone and say why; linuxutil keeps serving; /readyz lists them', { timeout: 90_000 }, async () => {
  await using agent = hiddenAgent(['/sys/fs/bpf', '/sys/kernel/tracing', '/sys/kernel/debug', '/sys/kernel/btf']);
  await agent.started(['linuxutil']);
  for (const p of EBPF) {
    const l = await agent.proc.waitForLog((x) => x.msg === 'plugin failed; not retrying' && x['plugin'] === p, `${p} failing`);
    assert.match(String(l['error']), /lacks kernel BTF \(\/sys\/kernel\/btf\/vmlinux\)/, `${p}'s log line names the missing file`);
    assert.equal(l.level, 'error');
  }
  const text = await agent.until(() => {
    const t = agent.metrics();
    return t.includes('networkobservability_tcp_state') ? t : undefined;
  }, 'linuxutil series');
  assert.ok(!text.includes('networkobservability_forward_count'), 'no packetforward series: it never ran');
  const r = agent.readyz();
  assert.equal(r.status, 'not ready');
  assert.equal(r.plugins.find((x) => x.name === 'linuxutil')?.state, 'running');
  for (const p of EBPF) {
    const s = r.plugins.find((x) => x.name === p);
    assert.equal(s?.state, 'failed', `${p}: ${JSON.stringify(s)}`);
    assert.match(s?.lastError ?? '', /kernel BTF/);
  }
  assert.equal(agent.proc.exit, undefined, 'the agent keeps running');
});
