/**
 * The real `hubble` CLI (both pins, Cilium v1.18.4 and v1.19.7, built by hack/hubble/build.sh) decoding the agent's GetFlows
 * stream as the raw path writes it (src/server/hubble/frames.ts: many gRPC messages per HTTP/2 write
 * and DATA frame): 20 000 followed flows with none lost, and history (--last, --first with a filter),
 * every flow in order. The server runs in this process over loopback; no cluster. Never skips: it fails when the hubble tools are not built.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { createFlow } from '../../src/flow/index.js';
import { createLogger } from '../../src/log/index.js';
import { createMetricsRegistry } from '../../src/metrics/index.js';
import { createFlowRing, loadHubbleProtos, startHubbleServer, type HubbleServer } from '../../src/server/hubble/index.js';
import { metric } from '../ebpf/netns.js';
import { eventually } from './harness.js';
import { HUBBLE_CLIS, hubbleTools } from './hubble-tools.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const flowAt = (i: number) => createFlow({
  srcIp: '10.0.0.1', dstIp: '10.0.1.1', verdict: i % 5 === 0 ? 'DROPPED' : 'FORWARDED', dropReason: i % 5 === 0 ? 'NETFILTER_DROP' : '',
  proto: 6, srcPort: i, dstPort: 80, tcpFlags: 16, timeMs: 1_700_000_000_000 + i,
});

/** `hubble observe ... -o jsonpb` until `want` flow lines (or the timeout): its parsed lines. */
function observe(tools: string, args: string[], want: number, whileRunning?: () => Promise<void>): Promise<Obj[]> {
  return new Promise((resolve, reject) => {
    const c = spawn(join(tools, 'hubble'), ['observe', ...args, '-o', 'jsonpb'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, HUBBLE_CONFIG: '/dev/null' } });
    const lines: Obj[] = [];
    let flows = 0;
    let rest = '';
    let err = '';
    const t = setTimeout(() => c.kill('SIGKILL'), 60_000);
    c.stdout.on('data', (d: Buffer) => {
      const ls = (rest + d.toString()).split('\n');
      rest = ls.pop() ?? '';
      for (const l of ls) {
        if (l.trim() === '') continue;
        const m = JSON.parse(l) as Obj;
        lines.push(m);
        if (m['flow'] && ++flows === want) c.kill('SIGINT');
      }
    });
    c.stderr.on('data', (d: Buffer) => (err += d.toString()));
    c.on('close', (code, signal) => {
      clearTimeout(t);
      if (flows >= want || code === 0) resolve(lines);
      else reject(new Error(`hubble ${args.join(' ')}: ${code ?? signal}, ${flows} flows: ${err.trim()}`));
    });
    whileRunning?.().catch(reject);
  });
}

for (const cli of HUBBLE_CLIS) describe(`the real hubble CLI reads the raw GetFlows stream (${cli.label})`, { timeout: 180_000 }, () => {
  let tools = '';
  let server: HubbleServer;
  // Large enough for every flow: the test is about framing and order, not the CLI's speed (its
  // printing can fall behind the writer here, and a smaller ring would then lap it).
  const ring = createFlowRing(32_768);
  const metrics = createMetricsRegistry({ processMetrics: false });
  /** The server's open GetFlows streams (hubble_clients): the follower is counted once its cursor is set. */
  const following = async (): Promise<number> => metric((await metrics.expose()).body, 'controlplane_networkobservability_hubble_clients', { rpc: 'GetFlows' });
  const addr = (): string => `127.0.45.3:${server.port}`;
  before(async () => {
    tools = hubbleTools(cli.pin);
    server = await startHubbleServer({
      protos: loadHubbleProtos(fileURLToPath(new URL('../../../proto/hubble', import.meta.url))), ring, listen: { host: '127.0.45.3', port: 0 },
      nodeName: 'node-x', version: 'test', log: createLogger({ level: 'error', component: 'test' }), metrics,
      peers: { list: () => [], subscribe: () => ({ [Symbol.dispose]: () => undefined }) },
    });
  });
  after(async () => {
    await server?.[Symbol.asyncDispose]();
  });

  it('--follow: 20 000 flows, every one in order, none lost', async () => {
    const lines = await observe(tools, ['--server', addr(), '--follow'], 20_000, async () => {
      // Written once the CLI's follow is open (a fixed 1.5 s assumed a machine quick enough to start it).
      await eventually('the hubble CLI\'s follow counted by the server', 30_000, async () => (await following()) >= 1, 50);
      // 256 per batch.
      for (let b = 0; b < 20_000; b += 256) {
        ring.consume({ source: 'test', flows: Array.from({ length: Math.min(256, 20_000 - b) }, (_, i) => flowAt(b + i)) });
        await new Promise((r) => setTimeout(r, 5));
      }
    });
    assert.ok(!lines.some((m) => m['lost_events']), 'no LostEvent');
    const ports = lines.filter((m) => m['flow']).map((m) => Number(m['flow']['l4']['TCP']['source_port'] ?? 0));
    assert.equal(ports.length, 20_000);
    assert.ok(ports.every((p, i) => p === i), `in order; first off at ${ports.findIndex((p, i) => p !== i)}`);
    const drop = lines.find((m) => m['flow']?.['verdict'] === 'DROPPED') as Obj;
    assert.equal(drop['flow']['Summary'], 'drop reason: NETFILTER_DROP');
    assert.equal(drop['node_name'], 'node-x');
  });

  it('--last 4000 and --first 100 with a filter: the history in order', async () => {
    const last = await observe(tools, ['--server', addr(), '--last', '4000'], 4000);
    const ports = last.filter((m) => m['flow']).map((m) => Number(m['flow']['l4']['TCP']['source_port']));
    assert.deepEqual(ports, Array.from({ length: 4000 }, (_, i) => 16_000 + i));
    const drops = await observe(tools, ['--server', addr(), '--first', '100', '--verdict', 'DROPPED'], 100);
    const dp = drops.filter((m) => m['flow']).map((m) => Number(m['flow']['l4']['TCP']['source_port'] ?? 0)); // jsonpb leaves out a zero
    // The ring holds every flow (0 to 19 999); every fifth is a drop.
    assert.deepEqual(dp, Array.from({ length: 100 }, (_, i) => i * 5));
  });
});
