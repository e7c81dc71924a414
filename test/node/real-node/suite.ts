/**
 * What the real-node suite's area modules (this folder) share: the suite's state, which its
 * before() and its cases fill in as they run (the node and its client, the imported image, the test
 * pods of the advanced-remote case), and the helpers of more than one area. test/node/real-node.test.ts
 * brings the node up once and registers every area's cases, in order, in its one describe.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resources, type RestClient } from '../../../src/k8s/index.js';
import { tool } from '../../chart/helm.js';
import { get } from '../../e2e/agent-process.js';
import { parseExposition, series, type Sample } from '../../e2e/exposition.js';
import { eventually, listAll, untilStable } from '../../integration/harness.js';
import type { PodNs } from '../../integration/pod-flows-net.js';
import type { RealNode } from '../node.js';
import { RELEASE_NS, namespaceEvents, podLog, type Pod } from '../workloads.js';

export const N = 40;
export const ADV = 'networkobservability_adv_';
export const CTX = ['namespace', 'podname', 'workload'];
export const CTX_IP = [...CTX, 'ip'];
export const run = promisify(execFile);
export const PROM = '127.0.0.1:19393';
export const AGENT_PORT = 10093; // the chart's default (config.apiServer.port), on the node's host network

/** One of the two test pods (Deployments `cli` in rn-a, `srv` in rn-b) and its network namespace. */
export interface TestPod {
  readonly name: string;
  readonly namespace: string;
  readonly ip: string;
  readonly ip6: string;
  readonly ns: PodNs;
}

export interface RealNodeSuite {
  /** Set by the suite's before(). */
  node: RealNode;
  client: RestClient;
  /** The image `make image` built, imported into the node's containerd. */
  imageRef: string;
  readonly nsA: string;
  readonly nsB: string;
  /** Filled by the advanced-remote case (chart.ts). */
  readonly pods: Record<'cli' | 'srv', TestPod>;
  /** The ClusterIP of Service `srv` in nsB (the advanced-remote case). */
  svcIp: string;
}

export function newSuite(): RealNodeSuite {
  // A case reading a test pod the advanced-remote case did not make fails saying so, not with a TypeError
  // on `undefined` (every later case reads them: one failure there, and the closing summary's first lines
  // should point at it).
  const pods = new Proxy({} as RealNodeSuite['pods'], {
    get(made, key) {
      if ((key === 'cli' || key === 'srv') && !(key in made)) throw new Error(`no test pod ${key}: the advanced-remote case (chart.ts), which makes the test pods, did not get that far`);
      return Reflect.get(made, key) as unknown;
    },
  });
  return { node: undefined as unknown as RealNode, client: undefined as unknown as RestClient, imageRef: '', nsA: 'rn-a', nsB: 'rn-b', pods, svcIp: '' };
}

/**
 * A case's steps, timed: `step(name, f)` runs f and keeps its time; a step that throws is rethrown naming
 * the step, its time and the steps before it (a set-up case that fails under load then says where the
 * time went); `done()` is the times of every step, for the case's diagnostic.
 */
export function steps(): { step: <T>(name: string, f: () => Promise<T>) => Promise<T>; done: () => string } {
  const took: string[] = [];
  return {
    async step(name, f) {
      const t0 = Date.now();
      try {
        const v = await f();
        took.push(`${name} ${Date.now() - t0} ms`);
        return v;
      } catch (e) {
        throw new Error(`${name}: failed after ${Date.now() - t0} ms (before it: ${took.join(', ') || 'nothing'}): ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
    },
    done: () => took.join(', '),
  };
}

/** helm with the node's kubeconfig. */
export const helmOf = (s: RealNodeSuite) => (args: string[]): ReturnType<typeof tool> => tool('helm', [...args, '--kubeconfig', s.node.kubeconfig], {}, 600_000);

/** The agent's data series, scraped now. */
export const scrape = async (): Promise<readonly Sample[]> => {
  const r = await get(AGENT_PORT, '/metrics');
  assert.equal(r.status, 200);
  return parseExposition(r.body.split('\n').filter((l) => l.startsWith('networkobservability_')).join('\n')).samples;
};
export const find = async (name: string, labels: Record<string, string>): Promise<Sample[]> => series({ types: new Map(), samples: await scrape() }, name, labels);
export const total = (xs: readonly Sample[]): number => xs.reduce((a, x) => a + x.value, 0);

/** The context labels of one test pod as the source or destination of a series. */
export const sideOf = (s: RealNodeSuite) => (p: 'cli' | 'srv', prefix: 'source' | 'destination', ip?: string): Record<string, string> => ({
  [`${prefix}_namespace`]: s.pods[p].namespace, [`${prefix}_podname`]: s.pods[p].name,
  [`${prefix}_workload_kind`]: 'Deployment', [`${prefix}_workload_name`]: p,
  ...(ip ? { [`${prefix}_ip`]: ip } : {}),
});

/**
 * adv_forward_count between the two test pods' addresses of one family, both directions, against nftables
 * counters (table `table`, in each pod's output hook) of what each pod sent around `send` (traffic from cli
 * to srv that prints "sent N"): waits until they are equal (at dataAggregationLevel high a flow's held
 * counts come with the report interval, 30 s, and the sweep after it) and returns [cli -> srv, srv -> cli].
 */
export async function forwardExact(s: RealNodeSuite, family: 'ip' | 'ip6', table: string, send: () => Promise<string>, timeoutMs = 30_000): Promise<number[]> {
  const side = sideOf(s);
  const { cli, srv } = s.pods;
  const sentByCli = cli.ns.countSent([srv[family]], table);
  const sentBySrv = srv.ns.countSent([cli[family]], table);
  const fwd = async (from: 'cli' | 'srv', to: 'cli' | 'srv'): Promise<number> => total(await find(`${ADV}forward_count`, { ...side(from, 'source', s.pods[from][family]), ...side(to, 'destination', s.pods[to][family]) }));
  const pair = async (): Promise<number[]> => [await fwd('cli', 'srv'), await fwd('srv', 'cli')];
  const before = await untilStable(pair);
  const s0 = [sentByCli.read(srv[family]), sentBySrv.read(cli[family])];
  assert.match(await send(), /sent \d+/);
  const want = (): number[] => [sentByCli.read(srv[family]) - (s0[0] ?? 0), sentBySrv.read(cli[family]) - (s0[1] ?? 0)];
  assert.ok((want()[0] ?? 0) >= 4, `at least 4 packets from cli (${family}: ${want()[0]})`);
  let last = '';
  return eventually(`adv_forward_count (${family}) = the nftables counts`, timeoutMs, async () => {
    const g = (await pair()).map((v, i) => v - (before[i] ?? 0));
    const w = want();
    last = `metrics ${JSON.stringify(g)}, nftables ${JSON.stringify(w)}`;
    return JSON.stringify(g) === JSON.stringify(w) && g;
  }, 250).catch((e: unknown) => assert.fail(`${String(e)}; last: ${last}`));
}

/** What the pods of the release say when they are not Ready: status, events and last log lines. */
export async function diagnosis(client: RestClient): Promise<string> {
  const pods = await listAll<Pod>(client, resources.pods, RELEASE_NS).catch(() => []);
  const out: string[] = [];
  for (const p of pods) {
    out.push(`pod ${p.metadata.name}: ${JSON.stringify(p.status?.containerStatuses ?? p.status)}`);
    out.push(...(await podLog(client, p).catch(() => [])).slice(-15).map((l) => `  ${JSON.stringify(l)}`));
  }
  out.push(...await namespaceEvents(client, RELEASE_NS));
  return out.join('\n');
}
