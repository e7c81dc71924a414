/**
 * Real-node cases, the chart: `helm install` with only image.* set (operator and Linux agent Ready
 * through the chart's own probes), then `helm upgrade` to the advanced-remote profile with the test
 * pods every later area uses (cli in rn-a; srv in rn-b with a TCP sink, a DNS server and a UDP sink,
 * Service srv, an nftables drop of UDP to 9999) and a MetricsConfiguration (see
 * test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { collectionPath, objectPath, resources, type KubeObject, type MetricsConfiguration, type RetinaEndpoint } from '../../../src/k8s/index.js';
import { CHART, profileFile } from '../../chart/helm.js';
import { get } from '../../e2e/agent-process.js';
import { parseExposition, series } from '../../e2e/exposition.js';
import { DNS_SERVER, TCP_SINK, UDP_SINK } from '../../ebpf/traffic.js';
import { createNamespace, eventually, listAll } from '../../integration/harness.js';
import { PodNs } from '../../integration/pod-flows-net.js';
import { NODE_IP, NODE_NAME, POD_CIDR6_PREFIX, POD_CIDR_PREFIX } from '../node.js';
import { IMAGE_VERSION, RELEASE, RELEASE_NS, SLEEPER, agentPods, daemonSetsRes, deploymentsRes, netnsOf, podLog, readyPod, scriptDeployment } from '../workloads.js';
import { AGENT_PORT, CTX, CTX_IP, diagnosis, helmOf, steps, type RealNodeSuite } from './suite.js';

/** helm install; helm upgrade to advanced-remote with the test pods. */
export function chartCases(s: RealNodeSuite): void {
  const helm = helmOf(s);
  const { nsA, nsB } = s;
  it('helm install (image.* only): operator and Linux agent Ready through the chart\'s probes; RBAC, token, mounts and capabilities as a kubelet gives them', async (t) => {
    const { client, imageRef } = s;
    const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
    const t0 = Date.now();
    const inst = await helm(['install', RELEASE, CHART, '-n', RELEASE_NS, '--set', `image.linux.repository=${repo}`, '--set', `image.linux.tag=${IMAGE_VERSION}`, '--set', 'image.linux.pullPolicy=Never']);
    assert.equal(inst.code, 0, `helm install: ${inst.stderr}\n${inst.stdout}`);
    const ready = await eventually('the agent DaemonSet and the operator Deployment Ready', 300_000, async () => {
      const [ds] = await listAll<KubeObject & { status: { numberReady?: number; desiredNumberScheduled?: number } }>(client, daemonSetsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
      const [op] = await listAll<KubeObject & { spec: { replicas: number }; status: { readyReplicas?: number } }>(client, deploymentsRes, RELEASE_NS, { labelSelector: `app.kubernetes.io/instance=${RELEASE}` });
      return ds && op && ds.status.desiredNumberScheduled === 1 && ds.status.numberReady === 1 && op.status.readyReplicas === op.spec.replicas && Date.now();
    }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`));
    t.diagnostic(`helm install -> all agents and the operator Ready: ${ready - t0} ms`);
    console.log(JSON.stringify({ figure: 'real-node-helm-install-to-ready', ms: ready - t0 }));

    const [agent] = await agentPods(client);
    assert.ok(agent, 'an agent pod');
    assert.equal(agent.spec.nodeName, NODE_NAME);
    assert.equal(agent.status?.podIP, NODE_IP, 'host network: the node\'s address');
    for (const c of agent.status?.containerStatuses ?? []) assert.equal(c.restartCount, 0, `${c.name} restarted: ${JSON.stringify(c.lastState)}`);
    assert.ok(agent.spec.volumes?.some((v) => v.name.startsWith('kube-api-access-') && v.projected), 'the ServiceAccount admission gave the pod its projected token');
    const log = await podLog(client, agent);
    const started = log.filter((l) => l['msg'] === 'plugin started').map((l) => String(l['plugin'])).sort();
    assert.deepEqual(started, ['dns', 'dropreason', 'linuxutil', 'packetforward'], `the chart's default plugins all started in the pod:\n${log.map((l) => JSON.stringify(l)).join('\n').slice(-4000)}`);

    const m = await get(AGENT_PORT, '/metrics');
    assert.equal(m.status, 200);
    const text = m.body.split('\n').filter((l) => l.startsWith('networkobservability_')).join('\n');
    const e = parseExposition(text);
    assert.ok(series(e, 'networkobservability_forward_count').length > 0, 'packetforward series');
    assert.ok(series(e, 'networkobservability_tcp_state').length > 0 || series(e, 'networkobservability_ip_connection_stats').length > 0, 'linuxutil series');
  });

  // ---- advanced-remote: real pods, real veths, real Services ----

  it('helm upgrade to the advanced-remote profile: the agent rolls, real pods get RetinaEndpoints from the operator', async (t) => {
    const { client, imageRef, pods } = s;
    const { step, done } = steps();
    const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
    await step('helm upgrade', async () => {
      const up = await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '-f', profileFile('advanced-remote'), '--set', `image.linux.repository=${repo}`, '--set', `image.linux.tag=${IMAGE_VERSION}`, '--set', 'image.linux.pullPolicy=Never']);
      assert.equal(up.code, 0, `helm upgrade: ${up.stderr}`);
    });
    await step('the upgraded agent Ready', () => eventually('the upgraded agent Ready', 300_000, async () => {
      const [ds] = await listAll<KubeObject & { metadata: { generation?: number }; status: { numberReady?: number; updatedNumberScheduled?: number; observedGeneration?: number } }>(client, daemonSetsRes, RELEASE_NS);
      return ds && ds.status.observedGeneration === ds.metadata.generation && ds.status.updatedNumberScheduled === 1 && ds.status.numberReady === 1;
    }, 500).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(client)}`)));
    await step('the upgraded agent pod serving', () => eventually('the upgraded agent pod serving', 60_000, async () => (await get(AGENT_PORT, '/readyz')).status === 200, 500));

    await step('the test pods created', async () => {
      for (const n of [nsA, nsB]) await createNamespace(client, n);
      await client.request('POST', collectionPath(deploymentsRes, nsA), { body: scriptDeployment(nsA, 'cli', imageRef, [{ name: 'main', script: SLEEPER }]) });
      await client.request('POST', collectionPath(deploymentsRes, nsB), {
        body: scriptDeployment(nsB, 'srv', imageRef, [
          { name: 'sink', script: TCP_SINK, args: ['0.0.0.0', '8080'], readyPort: 8080 },
          { name: 'dns', script: DNS_SERVER, args: ['$(POD_IP)', '::1'] },
          { name: 'udp', script: UDP_SINK, args: ['0.0.0.0', '7000'] },
        ]),
      });
      await client.request('POST', collectionPath(resources.services, nsB), {
        body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'srv', namespace: nsB }, spec: { selector: { app: 'srv' }, ports: [{ name: 'tcp', port: 80, targetPort: 8080, protocol: 'TCP' }] } },
      });
    });
    for (const [app, namespace] of [['cli', nsA], ['srv', nsB]] as const) {
      await step(`${app} Ready`, async () => {
        const p = await readyPod(client, namespace, app);
        assert.equal(p.spec.nodeName, NODE_NAME);
        assert.ok(p.status.podIP.startsWith(POD_CIDR_PREFIX), `${app}: a bridge CNI address (${p.status.podIP})`);
        const ip6 = ((p.status as { podIPs?: { ip: string }[] }).podIPs ?? []).map((x) => x.ip).find((ip) => ip.includes(':')) ?? '';
        assert.ok(ip6.startsWith(POD_CIDR6_PREFIX), `${app}: dual stack, an IPv6 address from the bridge CNI's second range (${JSON.stringify(p.status)})`);
        const netns = netnsOf(p.status.podIP);
        pods[app] = { name: p.metadata.name, namespace, ip: p.status.podIP, ip6, ns: new PodNs(netns, '', p.status.podIP, ip6) };
      });
    }
    s.svcIp = (await client.request<{ spec: { clusterIP: string } }>('GET', objectPath(resources.services, nsB, 'srv'))).spec.clusterIP;
    // The server pod drops UDP to 9999 (the dropped pod of the suite).
    pods.srv.ns.run('nft', ['-f', '-'], 'table inet rndrop {\n chain input {\n  type filter hook input priority 0;\n  udp dport 9999 drop\n }\n}\n');

    await step('RetinaEndpoints', () => eventually('RetinaEndpoints of both pods from the real Pods', 60_000, async () => {
      const res = [...await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, nsA), ...await listAll<RetinaEndpoint>(client, resources.retinaEndpoints, nsB)];
      return Object.values(pods).every((p) => res.some((r) => r.metadata.name === p.name && r.spec.podIPs?.includes(p.ip) && r.spec.podIPs.includes(p.ip6)));
    }, 500));
    const mc = {
      apiVersion: 'retina.sh/v1alpha1', kind: 'MetricsConfiguration', metadata: { name: 'real-node' },
      spec: {
        contextOptions: [
          { metricName: 'forward_count', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
          { metricName: 'forward_bytes', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
          { metricName: 'drop_count', sourceLabels: CTX_IP, destinationLabels: CTX_IP },
          { metricName: 'dns_request_count', sourceLabels: CTX, destinationLabels: CTX },
          { metricName: 'dns_response_count', sourceLabels: CTX, destinationLabels: CTX },
        ],
        namespaces: { include: [nsA, nsB] },
      },
    };
    await step('MetricsConfiguration Accepted', async () => {
      await client.request('POST', collectionPath(resources.metricsConfigurations), { body: mc });
      await eventually('MetricsConfiguration Accepted', 60_000, async () => (await client.request<MetricsConfiguration>('GET', objectPath(resources.metricsConfigurations, undefined, 'real-node'))).status?.state === 'Accepted');
    });
    await step('the agent applied it', async () => {
      const [agent] = await agentPods(client);
      assert.ok(agent);
      await eventually('the agent applied the MetricsConfiguration', 60_000, async () => (await podLog(client, agent)).some((l) => l['msg'] === 'advanced metrics spec applied'), 1000);
    });
    t.diagnostic(`steps: ${done()}`);
    t.diagnostic(`cli ${pods.cli.ip} (${pods.cli.ns.name}), srv ${pods.srv.ip} (${pods.srv.ns.name}), Service srv ${s.svcIp}`);
  });
}
