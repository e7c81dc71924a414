/**
 * Chaos against the real test control plane (hack/k8s/harness.sh), during pod churn (a Deployment
 * scaled up and down and its pods deleted, every few hundred ms, errors ignored while the API is gone):
 * 1. etcd SIGKILLed and started again (the API server up meanwhile), then etcd and kube-apiserver
 *    SIGKILLed together and started again.
 *    The operator (bin/retina-operator, leader election on, short lease) and the agent
 *    (bin/retina-agent with --kubeconfig, remote context) stay up the whole time: same pids, no exit,
 *    the agent's /healthz 200 and its watches reconnected (k8s_watch_events_total). The agent's IP
 *    cache (startAgentWatch, the code the agent runs, in this process so its content can be read)
 *    equals a fresh LIST of the API, and the RetinaEndpoints equal the eligible pods: none missing,
 *    none left over for a deleted pod, none with a stale spec.
 * 2. The operator SIGKILLed during a burst of pod creates and deletes, started again (a new identity:
 *    it waits out the dead leader's lease): the RetinaEndpoints converge exactly to the pods.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { IpCache } from '../../src/cache/index.js';
import { collectionPath, objectPath, resources, startAgentWatch, type AgentWatch, type PodWire, type RestClient } from '../../src/k8s/index.js';
import { AgentProcess, ROOT, agentEnv, get } from '../e2e/agent-process.js';
import { metric } from '../ebpf/netns.js';
import { assertCacheMatches, cacheMatches } from '../integration/cache-compare.js';
import {
  controlPlaneStatus, createNamespace, deleteNamespace, deployment, deployments, eligible, eventually, killComponent, listAll, reviveControlPlane, scale, startApiserver, startCluster,
  startEtcd, type Cluster,
} from '../integration/harness.js';
import { converged, endpointDiff, podsByState, testLog, uniqueId, type EndpointDiff } from '../integration/operator-helpers.js';

const WATCH_EVENTS = 'controlplane_networkobservability_k8s_watch_events_total';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface DeploymentWire {
  metadata: { name: string; generation?: number };
  spec: { replicas: number };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; readyReplicas?: number };
}

describe('chaos: the control plane and the operator killed during churn', { timeout: 600_000 }, () => {
  let cluster: Cluster;
  let client: RestClient;
  let watch: AgentWatch | undefined;
  let agent: AgentProcess | undefined;
  let operator: AgentProcess | undefined;
  let agentPort = 0;
  const cache = new IpCache();
  const ns = uniqueId('chaos');
  const lease = uniqueId('chaos-lease');
  const dir = mkdtempSync(join(tmpdir(), 'chaos-cp-'));

  const startOperatorProcess = async (): Promise<AgentProcess> => {
    const op = new AgentProcess({
      command: [`${ROOT}bin/retina-operator`], args: ['--kubeconfig', cluster.kubeconfig],
      env: agentEnv({
        RETINA_REMOTECONTEXT: 'true', RETINA_LEADERELECTIONID: lease, RETINA_METRICSADDR: '127.0.0.1:0', RETINA_PROBEADDR: '127.0.0.1:0',
        RETINA_LOGLEVEL: 'info', RETINA_LEASEDURATION: '4s', RETINA_RENEWDEADLINE: '3s', RETINA_RETRYPERIOD: '500ms',
      }),
    });
    try {
      await op.waitForLog((l) => l.msg === 'became leader', 'the operator leading', 30_000);
    } catch (e) {
      await op[Symbol.asyncDispose](); // not left running, leading later, beside the next test's operator
      throw e;
    }
    return op;
  };

  /** Scales between 8 and 24 replicas and deletes a pod, every 300 ms, until `stop`; API errors are expected. */
  const churn = (stop: AbortSignal): Promise<number> => (async () => {
    let n = 0;
    while (!stop.aborted) {
      n++;
      await scale(client, ns, 'churn', 8 + ((n * 7) % 17)).catch(() => undefined);
      const pods = await listAll<PodWire>(client, resources.pods, ns).catch(() => [] as PodWire[]);
      const victim = pods[n % Math.max(1, pods.length)];
      if (victim) await client.request('DELETE', objectPath(resources.pods, ns, victim.metadata.name)).catch(() => undefined);
      await sleep(300);
    }
    return n;
  })();

  /**
   * Why the endpoints do not match yet, or '' when they match steadily: in two looks a second apart
   * (no pod changing in between) they are exactly the eligible pods, and there are some. How many of
   * the Deployment's pods kwok runs again after the control plane's restart is kwok's and the
   * controller-manager's business (a full-suite run once had 11 of 20 running for minutes, their
   * endpoints exact): what this test owns is that the endpoints and the agent's cache converge to
   * whatever runs.
   */
  const mismatch = async (first?: EndpointDiff): Promise<string> => {
    const a = first ?? await endpointDiff(client, ns);
    if (a.pods === 0 || a.missing.length || a.extra.length) return `endpoints ${JSON.stringify(a)}`;
    await sleep(1000);
    const b = await endpointDiff(client, ns);
    if (b.pods !== a.pods || b.missing.length || b.extra.length) return `endpoints moved: ${JSON.stringify(a)} then ${JSON.stringify(b)}`;
    return (await converged(client, ns)) ? '' : 'a RetinaEndpoint\'s spec or owner differs from its pod (converged)';
  };

  /** Why the Deployment has not rolled out `replicas` of its current template yet, or ''. */
  const notRolled = (d: DeploymentWire, replicas: number): string =>
    (d.status?.observedGeneration ?? 0) >= (d.metadata.generation ?? 0) && d.status?.replicas === replicas && d.status?.updatedReplicas === replicas
      ? '' : `deployment generation ${d.metadata.generation} observed ${d.status?.observedGeneration}, replicas ${d.status?.replicas} updated ${d.status?.updatedReplicas} of ${replicas}`;

  /**
   * The Deployment scaled to `replicas`, then the endpoints match the running pods steadily (mismatch).
   * The Deployment is not required to reach its `replicas`: after the API server and etcd were killed,
   * kube-controller-manager's ReplicaSet controller can wait out its expectations (5 minutes) for the
   * creations and deletions it issued meanwhile (a full `make test` here read 2 of 20 for the whole
   * 120 s, the endpoints of those 2 exact). Its rollout is said when the check fails.
   */
  const settle = async (replicas: number, what: string): Promise<void> => {
    await scale(client, ns, 'churn', replicas);
    let why = '';
    await explained(eventually(`${what}: the running pods' RetinaEndpoints exactly`, 120_000, async () => {
      why = await mismatch();
      if (why) why += `; ${notRolled(await client.request<DeploymentWire>('GET', objectPath(deployments, ns, 'churn')), replicas) || `the Deployment rolled out its ${replicas}`}`;
      return !why;
    }, 1000), () => why);
    // Read again until it holds: the ReplicaSet controller can still be creating pods once its expectations expire,
    // and a pod that became Running after the check above has its RetinaEndpoint a moment later (a full run read 6
    // missing just after an exact check).
    let diff = await endpointDiff(client, ns);
    for (const until = Date.now() + 60_000; (diff.missing.length > 0 || diff.extra.length > 0 || diff.endpoints !== diff.pods) && Date.now() < until;) {
      await new Promise((r) => setTimeout(r, 1000));
      diff = await endpointDiff(client, ns);
    }
    assert.deepEqual({ missing: diff.missing, extra: diff.extra }, { missing: [], extra: [] }, `${what}: no missing or left-over RetinaEndpoint`);
    assert.equal(diff.endpoints, diff.pods);
  };

  /** The namespace's pods counted by state (podsByState). */
  const podStates = async (): Promise<string> => {
    try {
      return JSON.stringify(podsByState(await listAll<PodWire>(client, resources.pods, ns)));
    } catch (x) {
      return String(x);
    }
  };
  /** Each node's Ready condition. */
  const nodesReady = async (): Promise<string> => {
    try {
      const nodes = await listAll<{ metadata: { name: string }; status?: { conditions?: { type: string; status: string }[] } }>(client, resources.nodes);
      return nodes.map((n) => `${n.metadata.name}=${n.status?.conditions?.find((c) => c.type === 'Ready')?.status ?? '?'}`).join(' ');
    } catch (x) {
      return String(x);
    }
  };

  /** The last lines of a harness component's log that name an error, or its last lines when none does. */
  const componentLog = (name: string, lines = 6): string => {
    try {
      const all = readFileSync(join(ROOT, '.cache/k8s/run', `${name}.log`), 'utf8').trimEnd().split('\n');
      const errors = all.filter((l) => /^E\d{4}|error|fail/i.test(l));
      return (errors.length ? errors : all).slice(-lines).map((l) => `  ${l.slice(0, 300)}`).join('\n');
    } catch (x) {
      return `  ${String(x)}`;
    }
  };

  /**
   * A timeout, with what the endpoints, the Deployment, the pods, the control plane and the operator
   * looked like, and why the last look failed (`why`). The summary comes last: CI shows an output's tail.
   */
  const explained = async <T>(p: Promise<T>, why: () => string = () => ''): Promise<T> => {
    try {
      return await p;
    } catch (e) {
      const d = await client.request<DeploymentWire>('GET', objectPath(deployments, ns, 'churn')).then((x) => JSON.stringify({ spec: x.spec, status: x.status }), (x: unknown) => String(x));
      const diff = await endpointDiff(client, ns).then((x) => JSON.stringify(x), (x: unknown) => String(x));
      throw new Error([
        `${(e as Error).message}`,
        `operator exit: ${JSON.stringify(operator?.exit)}, its last log lines:\n${operator?.stderr.slice(-1500) ?? ''}`,
        `kube-controller-manager log:\n${componentLog('kube-controller-manager')}`, `kwok log:\n${componentLog('kwok')}`,
        (await controlPlaneStatus()).trimEnd(),
        `nodes: ${await nodesReady()}`, `deployment: ${d}`, `pods: ${await podStates()}`, `endpoints: ${diff}`,
        `the last look: ${why() || 'no reason recorded'}`,
      ].join('\n'), { cause: e });
    }
  };

  before(async () => {
    cluster = await startCluster({ disruptive: true });
    client = cluster.client;
    await createNamespace(client, ns);
    operator = await startOperatorProcess();
    const config = join(dir, 'agent.yaml');
    writeFileSync(config, 'apiServer:\n  host: 127.0.0.1\n  port: 0\nremoteContext: true\nenabledPlugin: [linuxutil]\nmetricsIntervalDuration: 1s\n');
    agent = new AgentProcess({ args: ['--config', config, '--kubeconfig', cluster.kubeconfig], env: agentEnv() });
    agentPort = await agent.listening(30_000);
    await agent.waitForLog((l) => l.msg === 'IP cache synced', 'the agent\'s IP cache synced', 60_000);
    watch = startAgentWatch({ client, cache, remoteContext: true, log: testLog('agent'), inactivityTimeoutMs: 60_000 });
    await watch.waitForSync();
    await client.request('POST', collectionPath(deployments, ns), { body: deployment(ns, 'churn', 16) });
  });

  after(async () => {
    await watch?.[Symbol.asyncDispose]();
    await agent?.[Symbol.asyncDispose]();
    await operator?.[Symbol.asyncDispose]();
    if (client) await deleteNamespace(client, ns);
    rmSync(dir, { recursive: true, force: true });
    await cluster?.[Symbol.asyncDispose]();
  });

  it('kube-apiserver and etcd SIGKILLed and restarted during churn: caches and RetinaEndpoints converge; nothing crash-loops', async () => {
    const a = agent as AgentProcess;
    const op = operator as AgentProcess;
    const pids = { agent: a.pid, operator: op.pid };
    const reconnects = async (): Promise<number> => {
      const text = (await get(agentPort, '/metrics')).body;
      return ['reconnected', 'relisted', 'error'].reduce((s, e) => s + metric(text, WATCH_EVENTS, { resource: 'retinaendpoints.retina.sh', event: e }), 0);
    };
    const before0 = await reconnects();
    const stop = new AbortController();
    const churning = churn(stop.signal);
    const t0 = Date.now();
    try {
      // etcd alone (the API server up, its storage gone), then both at once.
      await sleep(2000);
      await killComponent('etcd');
      await sleep(2000);
      await startEtcd();
      await sleep(2500);
      await Promise.all([killComponent('etcd'), killComponent('kube-apiserver')]);
      await sleep(1500);
      await startEtcd();
      await startApiserver();
      await sleep(2000);
    } finally {
      stop.abort();
    }
    const t1 = Date.now();
    // The harness's own clients (controller-manager, scheduler, kwok) may give up while the API is
    // gone; they are the cluster, not what is under test: start whichever exited.
    const status = await controlPlaneStatus();
    if (status.includes('stopped')) {
      console.log(`after the kills:\n${status}`);
      await reviveControlPlane();
    }
    const rounds = await churning;
    assert.ok(rounds >= 10, `churn ran during the kills (${rounds} rounds)`);
    await settle(20, 'after the control-plane kills');
    // On a timeout, the assertion's diff says what differs, and the watch's reflectors what they did. The bound is the
    // reflector's: each failed attempt while the API was gone doubled its backoff (0.8 s up to 30 s, jitter 1.5x), so
    // after a long outage (an API server slow to come back on a loaded machine) its next attempt can be 45 s away.
    const waited = Date.now();
    await eventually('the agent cache equal to a fresh LIST', 120_000, () => cacheMatches(client, cache), 500).catch(() => undefined);
    try {
      await assertCacheMatches(client, cache);
    } catch (e) {
      throw new Error(`${(e as Error).message}\nafter ${Date.now() - waited} ms; the watch's reflectors: ${JSON.stringify(watch?.stats())}`, { cause: e });
    }
    console.log(`control-plane kills: ${t1 - t0} ms of chaos, converged ${Date.now() - t1} ms later`);
    // Both processes lived through it, and the agent's own watches came back.
    assert.equal(a.exit, undefined, `the agent exited: ${a.stderr.slice(-2000)}`);
    assert.equal(op.exit, undefined, `the operator exited: ${op.stderr.slice(-2000)}`);
    assert.deepEqual({ agent: a.pid, operator: op.pid }, pids);
    assert.equal((await get(agentPort, '/healthz')).status, 200);
    const watchLines = (await get(agentPort, '/metrics')).body.split('\n').filter((l) => l.startsWith(WATCH_EVENTS)).join('\n');
    assert.ok((await reconnects()) > before0, `the agent process's RetinaEndpoint watch reconnected (before: ${before0}):\n${watchLines}\n${a.stderr.slice(-3000)}`);
    for (const l of [...a.logLines(), ...op.logLines()]) assert.ok(!/fatal|uncaught|unhandled/.test(l.msg), `no fatal error: ${JSON.stringify(l)}`);
  });

  it('the operator SIGKILLed during a burst of pod creates and deletes, restarted: RetinaEndpoints converge exactly', async () => {
    const stop = new AbortController();
    const burst = (async () => {
      // Bare pods created and deleted as fast as the API takes them, next to the Deployment's churn.
      for (let i = 0; !stop.signal.aborted; i++) {
        const name = `burst-${i}`;
        const body = { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels: { app: 'burst' } }, spec: (deployment(ns, 'x', 1) as { spec: { template: { spec: unknown } } }).spec.template.spec };
        await client.request('POST', collectionPath(resources.pods, ns), { body }).catch(() => undefined);
        if (i % 3 !== 2) await client.request('DELETE', objectPath(resources.pods, ns, `burst-${i - 1}`)).catch(() => undefined);
      }
    })();
    const churning = churn(stop.signal);
    try {
      await sleep(1500);
      const op = operator as AgentProcess;
      op.child.kill('SIGKILL');
      await op.waitExit(10_000);
      await sleep(1500);
      operator = await startOperatorProcess();
      await sleep(1500);
    } finally {
      stop.abort();
    }
    await Promise.all([burst, churning]);
    const bursts = (await listAll<PodWire>(client, resources.pods, ns)).filter((p) => p.metadata.name.startsWith('burst-')).length;
    assert.ok(bursts > 0, 'burst pods were kept (every third)');
    await eventually('the burst pods running', 60_000, async () => (await listAll<PodWire>(client, resources.pods, ns)).filter((p) => p.metadata.name.startsWith('burst-') && eligible(p)).length === bursts, 500);
    // The Deployment's pods and the bare pods that stayed: every one has its endpoint, no other is left, and the
    // set holds still between two looks (mismatch). The Deployment is not required to have reached its 12: a
    // full make test here once ended with RetinaEndpoints exactly the 251 pods while its status read 14 replicas
    // for 12 for the whole 120 s. kube-controller-manager's ReplicaSet controller waits on its expectations (5
    // minutes) for deletions it issued while the API server was killed in the test before; that is its state,
    // not the operator's, and the pods it keeps are pods like any other here.
    await scale(client, ns, 'churn', 12);
    let why = '';
    await explained(eventually('RetinaEndpoints exactly the pods after the operator restart', 120_000, async () => {
      const diff = await endpointDiff(client, ns);
      why = diff.pods < bursts ? `${diff.pods} eligible pods, fewer than the ${bursts} burst pods kept` : await mismatch(diff);
      if (why) why += `; ${notRolled(await client.request<DeploymentWire>('GET', objectPath(deployments, ns, 'churn')), 12) || 'the Deployment rolled out its 12'}`;
      return !why;
    }, 1000), () => why);
    const diff = await endpointDiff(client, ns);
    assert.deepEqual({ missing: diff.missing, extra: diff.extra }, { missing: [], extra: [] });
    assert.equal(diff.endpoints, diff.pods);
    assert.equal((operator as AgentProcess).exit, undefined);
  });
});
