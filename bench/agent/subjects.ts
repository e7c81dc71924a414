/**
 * What the agent benchmarks start, written once: the subjects (this checkout's `bin/retina-agent`, a
 * base checkout's from an environment variable, the image's bundle: its start-up snapshot and its ES
 * entry), their ABBA order, and the
 * pod-level agent on the test control plane holding 20 000 RetinaEndpoints, synced.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_BIN, AgentProcess, agentEnv, nodeBinary } from '../../test/e2e/agent-process.js';
import { agentNodeFlags, linuxBundle } from '../../test/bundle/serving.js';
import { createNamespace, deleteNamespace, startCluster, type Cluster } from '../../test/integration/harness.js';
import { uniqueId } from '../../test/integration/operator-helpers.js';
import { createEndpoints } from '../k8s/endpoints.js';

/** RetinaEndpoints on the control plane for the pod-level cases (issue 12's goal: 100 MB RSS with them). */
export const ENDPOINTS = 20_000;

/**
 * `current` (this checkout), `base` when `baseVar` names a checkout (its `bin/retina-agent`: a copy of
 * another build's dist/ beside a bin/ works too), `bundle` and `bundleEs` when `bundleVar` is 1.
 */
export function agentSubjects(baseVar: string, bundleVar?: string): Record<string, string[]> {
  const base = process.env[baseVar];
  return {
    current: [AGENT_BIN],
    ...(base ? { base: shimCommand(base.replace(/\/$/, '')) } : {}),
    // The image's command line: node, the shim's node flags, the start-up snapshot (hack/image/linux.sh);
    // `bundleEs`: the bundle's ES entry, as the image ran it before the snapshot (and Windows still does).
    ...(bundleVar && process.env[bundleVar] === '1' ? {
      bundle: [nodeBinary(), ...agentNodeFlags(), '--snapshot-blob', join(linuxBundle(), 'retina-agent.blob'), '--'],
      bundleEs: [nodeBinary(), ...agentNodeFlags(), join(linuxBundle(), 'retina-agent.mjs')],
    } : {}),
  };
}

/**
 * A checkout's agent as its `bin/retina-agent` runs it. A copy of a build's bin/ and dist/ has no
 * `.cache/node`, and the shim would then run the machine's `node` (Node 20 on these machines, which
 * made one 2.5-hour run a Node 20 figure): the shim's node flags with this checkout's node instead.
 */
function shimCommand(root: string): string[] {
  if (existsSync(join(root, '.cache', 'node', 'bin', 'node'))) return [join(root, 'bin', 'retina-agent')];
  return [nodeBinary(), ...agentNodeFlags(root), join(root, 'dist', 'src', 'cli', 'agent-main.js')];
}

/** ABBA order of the subjects over the rounds. */
export const abba = (names: readonly string[], round: number): string[] => (round % 2 ? [...names].reverse() : [...names]);

/** The test control plane with ENDPOINTS RetinaEndpoints in a namespace of their own (deleted on dispose). */
export async function endpointsCluster(): Promise<{ cluster: Cluster } & AsyncDisposable> {
  const cluster = await startCluster();
  const ns = uniqueId('bench-ep');
  try {
    await createNamespace(cluster.client, ns);
    await createEndpoints(cluster.client, ns, ENDPOINTS);
  } catch (e) {
    await cluster[Symbol.asyncDispose]();
    throw e;
  }
  return {
    cluster,
    async [Symbol.asyncDispose]() {
      try {
        await deleteNamespace(cluster.client, ns);
      } finally {
        await cluster[Symbol.asyncDispose]();
      }
    },
  };
}

/**
 * `command` at pod level (`enablePodLevel`, remote context) against `cluster`, in the host's network
 * namespace, once listening and its IP cache synced; `port` is its /metrics port.
 */
export async function podLevelAgent(cluster: Cluster, command: readonly string[]): Promise<{ agent: AgentProcess; port: number }> {
  const agent = new AgentProcess({
    command, args: ['--kubeconfig', cluster.kubeconfig],
    env: agentEnv({ RETINA_ENABLEPODLEVEL: 'true', RETINA_REMOTECONTEXT: 'true', RETINA_APISERVER_HOST: '127.0.0.1', RETINA_APISERVER_PORT: '0' }),
  });
  try {
    const port = await agent.listening(60_000);
    await agent.waitForLog((l) => l.msg === 'IP cache synced', '"IP cache synced"', 180_000);
    return { agent, port };
  } catch (e) {
    await agent[Symbol.asyncDispose]();
    throw e;
  }
}
