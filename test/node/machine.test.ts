/**
 * The real node leaves the machine as it found it (issue 23): node.sh state (sysctls kubelet and the
 * CNI rewrite, the bridge, the pods' veths and netns, KUBE-/CNI- iptables chains, kube-proxy's nft
 * tables, mounts under the node's dirs, kubepods cgroups, host dirs, live components) is the same
 * before `up` and after `down`, also when a run was killed (every component SIGKILLed, its lock's
 * holder dead) and the next `up` had to clean what it left. The machine-wide lock refuses a second node.
 * The node is dual stack: the IPv6 bits (forwarding sysctls of all, default and the host's interfaces,
 * ip6tables chains, kube-proxy's ip6 table, ip6 tables iptables-nft made) are in the state too.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { collectionPath, resources, type KubeObject, type RestClient } from '../../src/k8s/index.js';
import { createNamespace, deployment, eventually, listAll } from '../integration/harness.js';
import { LOCK, NODE_NAME, POD_CIDR_PREFIX, holdMachine, machineState, nodeClient, nodeLockFree, nodeSh } from './node.js';

const sysctls = (s: readonly string[]): string[] => s.filter((l) => l.startsWith('sysctl '));
/** The forwarding switches (IPv4 and IPv6; all, default and the host's own interfaces): on while a pod runs (the bridge plugin's isGateway), restored by down. */
const FORWARDING = /^sysctl net\.ipv4\.ip_forward=|^sysctl net\.ipv[46]\.conf\.[^.]+\.forwarding=/;
const PAUSE = 'docker.io/retina-ts-node/pause:1';

interface Pod extends KubeObject { spec: { nodeName?: string }; status?: { phase?: string; podIP?: string } }

async function runPod(client: RestClient, ns: string): Promise<Pod> {
  await createNamespace(client, ns);
  const d = deployment(ns, 'sleeper', 1) as { spec: { template: { spec: { containers: { image: string; imagePullPolicy?: string }[] } } } };
  for (const c of d.spec.template.spec.containers) Object.assign(c, { image: PAUSE, imagePullPolicy: 'Never' });
  await client.request('POST', collectionPath({ group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment', namespaced: true }, ns), { body: d });
  return eventually('the pod Running on the real node', 120_000, async () => {
    const pods = await listAll<Pod>(client, resources.pods, ns);
    const p = pods.find((x) => x.status?.phase === 'Running' && x.status.podIP?.startsWith(POD_CIDR_PREFIX));
    return p && p.spec.nodeName === NODE_NAME ? p : undefined;
  }, 500);
}

describe('real node: the machine before up and after down', { timeout: 1_500_000 }, () => {
  it('up, a pod, a killed run, up again (cleans), a second node refused, down: the machine is as before', async () => {
    // another run's real-node suites (a second checkout's make test on this machine) finish first
    using _suite = await holdMachine();
    await nodeLockFree();
    const before = await machineState();
    assert.deepEqual(before.filter((l) => !l.startsWith('sysctl ')), [], `the machine has leftovers of a real node before the test: ${before.join('\n')}`);

    // A first run whose holder dies without `down`: a test run killed mid-way.
    const holder = spawn('sleep', ['900'], { stdio: 'ignore' });
    const holderGone = new Promise((r) => holder.once('exit', r));
    try {
      await nodeSh(['up'], { RETINA_NODE_HOLDER_PID: String(holder.pid) });
      const up = await machineState();
      const notForwarding = (s: readonly string[]): string[] => sysctls(s).filter((l) => !FORWARDING.test(l));
      assert.deepEqual(notForwarding(up), notForwarding(before), 'kubelet rewrote sysctls at its start and up set them back');
      assert.ok(sysctls(before).some((l) => l.startsWith('sysctl net.ipv6.conf.eth0.forwarding=') || l.startsWith('sysctl net.ipv6.conf.lo.forwarding=')), `the host interfaces' IPv6 forwarding switches are in the state:\n${before.join('\n')}`);
      // the cluster DNS pod (CoreDNS, up's first pod): its CNI ADD turned forwarding on for both families
      for (const want of ['sysctl net.ipv4.ip_forward=1', 'sysctl net.ipv6.conf.all.forwarding=1', 'sysctl net.ipv6.conf.default.forwarding=1']) {
        assert.ok(up.includes(want), `${want} while the node is up:\n${up.join('\n')}`);
      }
      for (const want of ['link rtsnode0', 'process kubelet', 'process kube-proxy', 'process containerd', 'nft table ip kube-proxy', 'nft table ip6 kube-proxy', 'ip6tables -t filter -N KUBE-KUBELET-CANARY']) {
        assert.ok(up.includes(want), `${want} while the node is up:\n${up.join('\n')}`);
      }
      const client = await nodeClient();
      assert.ok(client, 'the node kubeconfig works');
      await runPod(client, 'machine-test');
      client.close();
      const withPod = await machineState();
      for (const re of [/^netns cni-/, /^veth veth/, /^cgroup \/sys\/fs\/cgroup\/memory\/kubepods$/, /^mount \/var\/lib\/retina-ts-node\/kubelet/, /^iptables -t filter -N KUBE-FIREWALL$/]) {
        assert.ok(withPod.some((l) => re.test(l)), `${re} with a pod running:\n${withPod.join('\n')}`);
      }
      await nodeSh(['kill']);
    } finally {
      holder.kill('SIGKILL');
    }
    await holderGone;

    // The next run takes over the dead holder's lock and cleans what the killed run left.
    await nodeSh(['up'], { RETINA_NODE_HOLDER_PID: String(process.pid) });
    try {
      const client = await nodeClient();
      assert.ok(client, 'the second node answers');
      const nodes = await listAll<KubeObject>(client, resources.nodes);
      assert.deepEqual(nodes.map((n) => n.metadata.name), [NODE_NAME], 'a fresh cluster: the killed run\'s etcd is gone');
      await runPod(client, 'machine-test-2');
      client.close();
      // A second node while this one runs: refused, naming the holder.
      const other = spawn('sleep', ['60'], { stdio: 'ignore' });
      try {
        await assert.rejects(nodeSh(['up'], { RETINA_NODE_HOLDER_PID: String(other.pid) }), (e: Error) => e.message.includes('in use') && e.message.includes(`pid=${process.pid}`) && e.message.includes(LOCK));
      } finally {
        other.kill('SIGKILL');
      }
    } finally {
      await nodeSh(['down']);
    }
    const after = await machineState();
    assert.deepEqual(after, before);
  });
});
