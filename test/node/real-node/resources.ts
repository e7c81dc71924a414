/**
 * Real-node case, what the agent costs: its pod's own cgroup (RSS, CPU) idle and under 50 000
 * packets/s between the two test pods (see test/node/real-node.test.ts for why the areas share one
 * node).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { it } from 'node:test';
import { agentPods, containerCgroup } from '../workloads.js';
import { forwardExact, type RealNodeSuite } from './suite.js';

/** UDP datagrams to argv[1]:argv[2] at argv[3] per second for argv[4] ms (batches every 10 ms); prints "sent N in T ms". */
const UDP_PACED = `
import dgram from 'node:dgram';
const [host, port, rate, ms] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const s = dgram.createSocket('udp4');
s.on('error', () => {});
const buf = Buffer.alloc(64, 0x61);
const t0 = Date.now();
let sent = 0;
while (Date.now() - t0 < ms) {
  const due = Math.floor(((Date.now() - t0) / 1000) * rate);
  const batch = [];
  for (; sent < due; sent++) batch.push(new Promise((r) => s.send(buf, port, host, r)));
  await Promise.all(batch);
  await new Promise((r) => setTimeout(r, 10));
}
s.close();
console.log('sent', sent, 'in', Date.now() - t0, 'ms');
`;

/** The agent pod's cgroup: RSS and CPU, idle and under load. */
export function resourceCases(s: RealNodeSuite): void {
  it('the agent pod\'s own cgroup: RSS and CPU idle and under 50 000 packets/s between two pods', async (t) => {
    const { client, pods } = s;
    const [agent] = await agentPods(client);
    assert.ok(agent?.metadata.uid);
    const mem = containerCgroup(agent, 'memory');
    const cpu = containerCgroup(agent, 'cpuacct');
    // resident = anonymous (total_rss) + file pages mapped (total_mapped_file: node's own text, the bundle)
    const rssMiB = (): number => {
      const stat = readFileSync(`${mem}/memory.stat`, 'utf8');
      const v = (k: string): number => Number(new RegExp(`^${k} (\\d+)$`, 'm').exec(stat)?.[1] ?? NaN);
      return (v('total_rss') + v('total_mapped_file')) / 1048576;
    };
    const cpuNs = (): number => Number(readFileSync(`${cpu}/cpuacct.usage`, 'utf8'));
    const window = async (ms: number, load?: () => Promise<string>): Promise<{ cores: number; rssMiB: number; out?: string }> => {
      const c0 = cpuNs();
      const t0 = process.hrtime.bigint();
      const out = load ? await load() : (await new Promise((r) => setTimeout(r, ms)), undefined);
      const wallNs = Number(process.hrtime.bigint() - t0);
      return { cores: (cpuNs() - c0) / wallNs, rssMiB: rssMiB(), ...(out ? { out } : {}) };
    };
    // the process's own resident set too: the image's files are shared page cache, charged to whichever
    // pod's cgroup read them first (the operator's, for node and the bundle), so the cgroup undercounts them
    const pid = Number(readFileSync(`${mem}/cgroup.procs`, 'utf8').trim().split('\n')[0]);
    const vmRssMiB = (): number => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024;
    // The agent's own CPU is small either way (the programs run in the senders' softirq, charged to no pod;
    // at dataAggregationLevel high the kernel adds a flow's packets up and the agent reads them once a report
    // interval), so its CPU under the load is not compared with its idle CPU: in a loaded run the sender
    // reaches a fifth of its rate and the two differ by less than their noise. That the agent saw the load is
    // shown by its counts instead: adv_forward_count between the pods equal to what nftables counted, both
    // directions (whatever rate the machine let the sender reach), and its CPU under the load kept under what
    // the chart requests for it (charts/retina/values.yaml, agent.linux.resources.requests.cpu: 50m).
    const idle = await window(10_000);
    const idleVmRss = vmRssMiB();
    let busy: Awaited<ReturnType<typeof window>> | undefined;
    let busyVmRss = NaN;
    const counted = await forwardExact(s, 'ip', 'rescount', async () => {
      busy = await window(10_000, () => pods.cli.ns.node(UDP_PACED, [pods.srv.ip, '7000', '50000', '10000'], 60_000));
      busyVmRss = vmRssMiB();
      return busy.out ?? '';
    }, 90_000);
    assert.ok(busy);
    const sent = /sent (\d+) in (\d+) ms/.exec(busy.out ?? '');
    assert.ok(sent, `the paced sender's report: ${busy.out}`);
    const rate = Number(sent[1]) / (Number(sent[2]) / 1000);
    const fig = { figure: 'real-node-agent-cgroup', idle: { cpuCores: +idle.cores.toFixed(3), cgroupRssMiB: +idle.rssMiB.toFixed(1), vmRssMiB: +idleVmRss.toFixed(1) }, load: { packetsPerSecond: Math.round(rate), cpuCores: +busy.cores.toFixed(3), cgroupRssMiB: +busy.rssMiB.toFixed(1), vmRssMiB: +busyVmRss.toFixed(1), countedCliToSrv: counted[0], countedSrvToCli: counted[1] } };
    t.diagnostic(JSON.stringify(fig));
    console.log(JSON.stringify(fig));
    assert.ok(idle.rssMiB > 10 && idle.rssMiB < 512, `a plausible RSS under the chart's limit: ${JSON.stringify(fig)}`);
    assert.ok(busy.cores < 0.05, `the agent's CPU under the load within the chart's request of 50m: ${JSON.stringify(fig)}`);
  });
}
