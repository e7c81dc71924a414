/**
 * Real-node cases, on call (issue 39): `kubectl-retina bpftrace` on the node against scripted faults
 * (an nftables deny from the client pod to the server pod, a closed port on the server pod, an NFQUEUE
 * rule with no reader; IPv4 and IPv6), and `kubectl-retina shell` on the node (a host-network pod) and in the server pod (an ephemeral
 * container), each running commands typed on its stdin; every pod they make is gone afterwards. The
 * shell image is `make image`'s (build/image/retina-ts-shell-<arch>.oci.tar), imported into the node's
 * containerd (see test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { objectPath, resources } from '../../../src/k8s/index.js';
import { ROOT } from '../../chart/helm.js';
import { withDrops } from '../../ebpf/drop-lock.js';
import { createNamespace, eventually, listAll } from '../../integration/harness.js';
import { BRIDGE, NODE_IP, NODE_NAME, importImage } from '../node.js';
import { IMAGE_VERSION, type Pod } from '../workloads.js';
import type { RealNodeSuite } from './suite.js';

const SHELL_ARCHIVE = join(ROOT, 'build', 'image', `retina-ts-shell-${process.arch === 'arm64' ? 'arm64' : 'amd64'}.oci.tar`);
const DENIED = 39_700;
const CLOSED = 39_701;
const QUEUED = 39_702;

interface Run {
  readonly child: ChildProcess;
  stdout: string;
  stderr: string;
  readonly done: Promise<number | null>;
}

function kubectlRetina(args: readonly string[], kubeconfig: string): Run {
  const child = spawn(`${ROOT}bin/kubectl-retina`, [...args, '--kubeconfig', kubeconfig], { stdio: ['pipe', 'pipe', 'pipe'] });
  const r: Run = {
    child, stdout: '', stderr: '',
    done: new Promise((res) => child.once('close', (code) => res(code))),
  };
  child.stdout?.on('data', (d: Buffer) => (r.stdout += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (r.stderr += d.toString()));
  return r;
}

/** A TCP connect from the pod's namespace that fails (a drop times it out, a closed port refuses it). */
const CONNECT = `
import net from 'node:net';
const [host, port] = process.argv.slice(1);
const c = net.connect({ host, port: Number(port), timeout: 2500 });
c.on('connect', () => { console.log('connected'); c.destroy(); });
c.on('timeout', () => { console.log('timeout'); c.destroy(); });
c.on('error', (e) => console.log(e.code));
`;

export function debugCases(s: RealNodeSuite): void {
  const ns = 'rn-debug';
  let shellRef = '';
  const leftovers = async (app: string): Promise<string[]> =>
    (await listAll<Pod>(s.client, resources.pods, ns, { labelSelector: `app=${app}` })).map((p) => p.metadata.name);

  it('the shell image (make image) imports into the node\'s containerd', async (t) => {
    assert.ok(existsSync(SHELL_ARCHIVE), `${SHELL_ARCHIVE} is missing: run make image`);
    const out = await importImage(SHELL_ARCHIVE);
    shellRef = `docker.io/library/retina-ts-shell:${IMAGE_VERSION}`;
    assert.ok(out.split('\n').includes(shellRef), `containerd has no ${shellRef}: ${out}`);
    await createNamespace(s.client, ns);
    t.diagnostic(`shell image ${shellRef}`);
  });

  it('kubectl-retina bpftrace: the nftables deny client -> server seen as NETFILTER_DROP and the closed port as RST_SENT and ECONNREFUSED, an unread NFQUEUE as NFQ_DROP, IPv4 and IPv6, as JSON lines; the trace pod gone afterwards', () => withDrops(async () => {
    const { cli, srv } = s.pods;
    assert.ok(cli && srv && shellRef, 'the pods of the advanced-remote case and the shell image');
    const t0 = Date.now();
    const trace = kubectlRetina(['bpftrace', NODE_NAME, '-n', ns, '--image', shellRef, '--drops', '--rst', '--errors', '--nfqueue-drops', '--ip', `${srv.ip},${srv.ip6}`, '--duration', '50s', '-o', 'json'], s.node.kubeconfig);
    try {
      await eventually('the trace started', 120_000, async () => trace.stdout.includes('"event":"start"') || (trace.child.exitCode !== null && assert.fail(`bpftrace exited: ${trace.stderr}`)), 200);
      const started = Date.now() - t0;
      // the faults: the server pod drops TCP from the client to DENIED; nothing listens on CLOSED
      // and an NFQUEUE rule sends TCP to QUEUED to queue 7, which nothing reads
      srv.ns.run('nft', ['-f', '-'], `table inet rndeny {\n chain input {\n  type filter hook input priority 0;\n  ip saddr ${cli.ip} tcp dport ${DENIED} drop\n  ip6 saddr ${cli.ip6} tcp dport ${DENIED} drop\n }\n}\n`);
      const queue = ['INPUT', '-p', 'tcp', '--dport', String(QUEUED), '-j', 'NFQUEUE', '--queue-num', '7'];
      srv.ns.run('iptables', ['-A', ...queue]);
      srv.ns.run('ip6tables', ['-A', ...queue]);
      try {
        const answers = [];
        for (const ip of [srv.ip, srv.ip6]) {
          for (const port of [DENIED, CLOSED, QUEUED]) answers.push((await cli.ns.node(CONNECT, [ip, String(port)])).trim());
        }
        assert.deepEqual(answers, ['timeout', 'ECONNREFUSED', 'timeout', 'timeout', 'ECONNREFUSED', 'timeout'], 'the faults as the client sees them');
      } finally {
        srv.ns.run('nft', ['delete', 'table', 'inet', 'rndeny']);
        srv.ns.run('iptables', ['-D', ...queue]);
        srv.ns.run('ip6tables', ['-D', ...queue]);
      }
      const code = await trace.done;
      assert.equal(code, 0, trace.stderr);
      const lines = trace.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(lines.at(-1)?.['event'], 'end', 'Retina\'s end line last');
      const events = lines.filter((l) => l['type']);
      const has = (want: Record<string, unknown>): boolean => events.some((e) => Object.entries(want).every(([k, v]) => e[k] === v));
      for (const [family, c, v] of [['IPv4', cli.ip, srv.ip], ['IPv6', cli.ip6, srv.ip6]] as const) {
        assert.ok(has({ type: 'DROP', family, reason: 'NETFILTER_DROP', src_ip: c, dst_ip: v, dst_port: DENIED, protocol: 'TCP' }), `${family} NETFILTER_DROP ${c} -> ${v}:${DENIED} in ${JSON.stringify(events)}`);
        assert.ok(has({ type: 'DROP', family, reason: 'NO_SOCKET', src_ip: c, dst_ip: v, dst_port: CLOSED }), `${family} NO_SOCKET drop of the SYN to ${v}:${CLOSED}`);
        assert.ok(has({ type: 'RST_SENT', family, src_ip: v, src_port: CLOSED, dst_ip: c }), `${family} RST_SENT from ${v}:${CLOSED}`);
        assert.ok(has({ type: 'SOCK_ERR', family, error: 'ECONNREFUSED', errno: 111, src_ip: c, dst_ip: v, dst_port: CLOSED }), `${family} ECONNREFUSED at the client`);
        assert.ok(has({ type: 'NFQ_DROP', family, location: 'nf_queue', src_ip: c, dst_ip: v, dst_port: QUEUED }), `${family} NFQ_DROP of the SYN to ${v}:${QUEUED}`);
      }
      assert.ok(events.every((e) => [srv.ip, srv.ip6].includes(e['src_ip'] as string) || [srv.ip, srv.ip6].includes(e['dst_ip'] as string)), 'only the --ip addresses');
      await eventually('the trace pod deleted', 60_000, async () => (await leftovers('retina-trace')).length === 0, 500);
      const nfDrops = events.filter((e) => e['reason'] === 'NETFILTER_DROP' && e['dst_port'] === DENIED).length;
      const kinds = new Map<string, number>();
      for (const e of events) kinds.set(`${String(e['type'])} ${String(e['reason'] ?? e['error'] ?? '')} ${String(e['family'])}`, (kinds.get(`${String(e['type'])} ${String(e['reason'] ?? e['error'] ?? '')} ${String(e['family'])}`) ?? 0) + 1);
      console.log(`# bpftrace: started in ${started} ms; ${events.length} events, ${nfDrops} NETFILTER_DROP; ${[...kinds].map(([k, n]) => `${k}: ${n}`).join(', ')}; e.g. ${JSON.stringify(events.find((e) => e['reason'] === 'NETFILTER_DROP'))}`);
    } finally {
      if (trace.child.exitCode === null) trace.child.kill('SIGKILL');
    }
  }));

  it('kubectl-retina bpftrace stopped by Ctrl-C (SIGINT) ends with Retina\'s end line and deletes its pod', async () => {
    const trace = kubectlRetina(['bpftrace', NODE_NAME, '-n', ns, '--image', shellRef, '--rst', '-o', 'json'], s.node.kubeconfig);
    await eventually('the trace started', 120_000, async () => trace.stdout.includes('"event":"start"') || (trace.child.exitCode !== null && assert.fail(`bpftrace exited: ${trace.stderr}`)), 200);
    assert.deepEqual(await leftovers('retina-trace').then((x) => x.length), 1, 'its pod while it traces');
    trace.child.kill('SIGINT');
    assert.equal(await trace.done, 0, trace.stderr);
    assert.match(trace.stdout.trim().split('\n').at(-1) ?? '', /"event":"end".*SIGINT/);
    await eventually('the trace pod deleted', 60_000, async () => (await leftovers('retina-trace')).length === 0, 500);
  });

  it('kubectl-retina shell NODE: commands typed on stdin run in a host-network pod on the node (its hostname, its bridge); exit 3 is the command\'s status; the pod is gone afterwards', async () => {
    const sh = kubectlRetina(['shell', NODE_NAME, '-n', ns, '--image', shellRef, '--capabilities', 'NET_ADMIN'], s.node.kubeconfig);
    await eventually('the shell attached', 120_000, async () => sh.stderr.includes('attached') || (sh.child.exitCode !== null && assert.fail(`shell exited: ${sh.stderr}`)), 200);
    assert.equal((await leftovers('retina-shell')).length, 1, 'the shell pod while attached');
    await new Promise((r) => setTimeout(r, 500));
    sh.child.stdin?.write(`echo "marker-$((6*7))-$(hostname)"; ip -o -4 addr show ${BRIDGE}; exit 3\n`);
    const code = await sh.done;
    const host = (await import('node:os')).hostname();
    assert.ok(sh.stdout.includes(`marker-42-${host}`), `the node's hostname from the shell: ${sh.stdout}`);
    assert.ok(sh.stdout.includes(`inet ${NODE_IP}/24`), `the node's bridge ${BRIDGE} and its address in the shell's network namespace: ${sh.stdout}`);
    assert.equal(code, 3, sh.stderr);
    await eventually('the shell pod deleted', 60_000, async () => (await leftovers('retina-shell')).length === 0, 500);
  });

  it('kubectl-retina shell pods/NAME: an ephemeral container in the server pod\'s network namespace runs the commands; it ends with the session', async () => {
    const { srv } = s.pods;
    const sh = kubectlRetina(['shell', `pods/${srv.name}`, '-n', srv.namespace, '--image', shellRef], s.node.kubeconfig);
    await eventually('the shell attached', 120_000, async () => sh.stderr.includes('attached') || (sh.child.exitCode !== null && assert.fail(`shell exited: ${sh.stderr}`)), 200);
    await new Promise((r) => setTimeout(r, 500));
    sh.child.stdin?.write(`echo "marker-$((6*7))"; ip -o -4 addr show eth0; exit\n`);
    sh.child.stdin?.end();
    const code = await sh.done;
    assert.equal(code, 0, sh.stderr);
    assert.ok(sh.stdout.includes('marker-42'), sh.stdout);
    assert.ok(sh.stdout.includes(` ${srv.ip}/`), `the pod's address in the ephemeral container: ${sh.stdout}`);
    const pod = await s.client.request<Pod & { status: { ephemeralContainerStatuses?: { name: string; state?: { terminated?: unknown } }[] } }>('GET', objectPath(resources.pods, srv.namespace, srv.name));
    const eph = pod.status.ephemeralContainerStatuses ?? [];
    assert.ok(eph.length >= 1 && eph.every((c) => c.state?.terminated), `the ephemeral container ended: ${JSON.stringify(eph)}`);
    assert.equal(pod.status.phase, 'Running', 'the pod itself runs on');
  });

  it('kubectl-retina shell NODE stopped by SIGINT outside a terminal deletes its pod', async () => {
    const sh = kubectlRetina(['shell', NODE_NAME, '-n', ns, '--image', shellRef], s.node.kubeconfig);
    await eventually('the shell attached', 120_000, async () => sh.stderr.includes('attached') || (sh.child.exitCode !== null && assert.fail(`shell exited: ${sh.stderr}`)), 200);
    sh.child.kill('SIGINT');
    assert.equal(await sh.done, 130, sh.stderr);
    await eventually('the shell pod deleted', 60_000, async () => (await leftovers('retina-shell')).length === 0, 500);
    await s.client.request('DELETE', objectPath(resources.namespaces, undefined, ns)).catch(() => undefined);
  });
}
