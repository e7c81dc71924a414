/**
 * Real-node cases, the agent's lifecycle: each way its process goes (the pod deleted, the container
 * SIGKILLed, a `helm upgrade` rolling it) is followed by exactly one set of hooks, /metrics has no gap
 * beyond one scrape interval, and `helm uninstall` plus docs/install.md's CRD deletion leave nothing
 * of ours (see test/node/real-node.test.ts for why the areas share one node).
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { parse } from 'yaml';
import { collectionPath, objectPath, resources, type KubeObject } from '../../../src/k8s/index.js';
import { CHART } from '../../chart/helm.js';
import { get } from '../../e2e/agent-process.js';
import { bpfIdsOf, leftoversAfterStop, sh } from '../../ebpf/netns.js';
import { createNamespace, eventually, listAll } from '../../integration/harness.js';
import { hooksOnNode, podPids, stillLoaded, type Hooks } from '../hooks.js';
import { BRIDGE, NODE_NAME } from '../node.js';
import { RELEASE, RELEASE_NS, agentPods, containerCgroup, type Pod } from '../workloads.js';
import { AGENT_PORT, diagnosis, helmOf, run, type RealNodeSuite } from './suite.js';

/** Pod deleted, container killed, upgrade, uninstall: one set of hooks, then none. */
export function lifecycleCases(s: RealNodeSuite): void {
  const helm = helmOf(s);
  // ---- lifecycle: each way the agent's process goes is followed by exactly one set of hooks ----
  /** The release's agent pod that `pred` accepts (a new pod, a restarted container), once Ready and serving /readyz. */
  const readyAgent = async (what: string, pred: (p: Pod) => boolean): Promise<Pod> => {
    const pod = await eventually(what, 180_000, async () => {
      const ps = (await agentPods(s.client)) as (Pod & { status?: { conditions?: { type: string; status: string }[] } })[];
      return ps.find((p) => !p.metadata.deletionTimestamp && pred(p) && p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    }, 250).catch(async (e: unknown) => assert.fail(`${String(e)}\n${await diagnosis(s.client)}`));
    await eventually('the agent serving /readyz', 60_000, async () => (await get(AGENT_PORT, '/readyz', 2000)).status === 200, 250);
    return pod;
  };
  /** Waits until the agent's hooks are `want`'s shape (attached, programs) and no killed run's filter is left; fails naming the last difference. */
  const sameSetAs = async (want: Hooks, pod: Pod): Promise<Hooks> => {
    let last = '';
    return eventually('exactly one set of hooks, the new agent\'s', 60_000, () => {
      const h = hooksOnNode(podPids(pod));
      last = JSON.stringify({ attached: h.attached, progNames: h.progNames, strayFilters: h.strayFilters, oldProgramsLoaded: stillLoaded(want.progIds) });
      return JSON.stringify(h.attached) === JSON.stringify(want.attached) && JSON.stringify(h.progNames) === JSON.stringify(want.progNames)
        && h.strayFilters.length === 0 && stillLoaded(want.progIds).length === 0 && h;
    }, 500).catch((e: unknown) => assert.fail(`${String(e)}\nwanted ${JSON.stringify({ attached: want.attached, progNames: want.progNames })}\nlast ${last}`));
  };
  const hooksNow = async (): Promise<{ pod: Pod; hooks: Hooks }> => {
    const [pod] = await agentPods(s.client);
    assert.ok(pod, 'an agent pod');
    const hooks = hooksOnNode(podPids(pod));
    assert.ok(hooks.attached.some((a) => a.includes(' tc ') || a.includes(' tcx ')), `the agent has hooks on the node's interfaces: ${JSON.stringify(hooks)}`);
    assert.ok(hooks.attached.some((a) => a.startsWith('veth')), `packetparser on the pods' veths: ${JSON.stringify(hooks.attached)}`);
    assert.deepEqual(hooks.strayFilters, [], 'no filter of an earlier run');
    return { pod, hooks };
  };

  it('deleting the agent pod: the DaemonSet\'s new pod holds exactly one set of hooks, none of the old pod\'s are left', async (t) => {
    const { client } = s;
    const { pod: old, hooks: before } = await hooksNow();
    const t0 = Date.now();
    await client.request('DELETE', objectPath(resources.pods, RELEASE_NS, old.metadata.name));
    const fresh = await readyAgent('a new agent pod Ready', (p) => p.metadata.uid !== old.metadata.uid);
    const after = await sameSetAs(before, fresh);
    t.diagnostic(`pod deleted -> new pod Ready with one set (${after.attached.length} hooks, ${after.progIds.length} programs): ${Date.now() - t0} ms`);
  });

  it('SIGKILL of the agent container through containerd (ctr tasks kill): the restarted container holds exactly one set of hooks', async (t) => {
    const { node } = s;
    const { pod, hooks: before } = await hooksNow();
    const status = pod.status?.containerStatuses?.[0] as { containerID?: string; restartCount: number } | undefined;
    const id = status?.containerID?.replace(/^containerd:\/\//, '') ?? '';
    assert.ok(id, 'the agent container\'s id');
    const pids = podPids(pod);
    const t0 = Date.now();
    await run(join(node.bin, 'ctr'), ['--address', '/run/retina-ts-node/containerd.sock', '-n', 'k8s.io', 'tasks', 'kill', '--signal', 'SIGKILL', id], { timeout: 30_000 });
    await eventually('the killed agent process gone', 30_000, () => pids.every((p) => !existsSync(`/proc/${p}`)), 100);
    // what the kill left until the new container starts: clsact filters keep their programs; TCX links go with the process's fds
    const left = hooksOnNode([]);
    const restarted = await readyAgent('the agent container restarted and Ready', (p) => p.metadata.uid === pod.metadata.uid && (p.status?.containerStatuses?.[0]?.restartCount ?? 0) > (status?.restartCount ?? 0));
    assert.equal(restarted.status?.containerStatuses?.[0]?.restartCount, (status?.restartCount ?? 0) + 1, 'restarted once');
    const after = await sameSetAs(before, restarted);
    t.diagnostic(`killed -> restarted with one set (${after.attached.length} hooks): ${Date.now() - t0} ms; the kill left ${left.strayFilters.length} tc filters for the new run to remove`);
  });

  it('helm upgrade to a changed config: the DaemonSet rolls, /metrics scraped every second has no gap beyond one scrape interval, no hook left behind', async (t) => {
    const { imageRef } = s;
    const job = (parse(readFileSync(join(CHART, 'scrape', 'prometheus-job.yaml'), 'utf8')) as { scrape_interval: string }[])[0];
    const intervalMs = Number(/^(\d+)s$/.exec(job?.scrape_interval ?? '')?.[1] ?? NaN) * 1000;
    assert.ok(intervalMs > 0, `the chart's scrape interval: ${job?.scrape_interval}`);
    const { pod: old, hooks: before } = await hooksNow();
    const oks: { at: number; start: string }[] = [];
    let scraping = true;
    const scraper = (async () => {
      while (scraping) {
        const at = Date.now();
        const r = await get(AGENT_PORT, '/metrics', 1000).catch(() => undefined);
        const start = r?.status === 200 ? /^process_start_time_seconds (\S+)$/m.exec(r.body)?.[1] : undefined;
        if (start) oks.push({ at, start });
        await new Promise((res) => setTimeout(res, Math.max(0, at + 1000 - Date.now())));
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 3000));
      const repo = imageRef.slice(0, imageRef.lastIndexOf(':'));
      const up = await helm(['upgrade', RELEASE, CHART, '-n', RELEASE_NS, '--reuse-values', '--set', 'config.metricsIntervalDuration=5s', '--set', `image.linux.repository=${repo}`]);
      assert.equal(up.code, 0, `helm upgrade: ${up.stderr}`);
      const fresh = await readyAgent('the rolled agent pod Ready', (p) => p.metadata.uid !== old.metadata.uid);
      t.diagnostic(`rolled to ${fresh.metadata.name}`);
      await new Promise((r) => setTimeout(r, 3000));
      scraping = false;
      await scraper;
      const starts = [...new Set(oks.map((o) => o.start))];
      assert.equal(starts.length, 2, `scrapes of the old agent, then of the new one: ${starts.join(', ')}`);
      let gap = 0;
      for (let i = 1; i < oks.length; i++) gap = Math.max(gap, (oks[i]?.at ?? 0) - (oks[i - 1]?.at ?? 0));
      t.diagnostic(`${oks.length} scrapes; the longest gap between two answered scrapes: ${gap} ms (scrape interval ${intervalMs} ms)`);
      console.log(JSON.stringify({ figure: 'real-node-upgrade-metrics-gap', ms: gap, scrapeIntervalMs: intervalMs }));
      assert.ok(gap < intervalMs, `/metrics was silent ${gap} ms, more than one scrape interval (${intervalMs} ms)`);
      await sameSetAs(before, fresh);
    } finally {
      scraping = false;
      await scraper;
    }
  });

  it('helm uninstall: the agent pod goes and leaves no tc filter, TCX link, BPF program or pinned map; the documented CRD deletion leaves no object of ours', async (t) => {
    const { client } = s;
    const [agent] = await agentPods(client);
    assert.ok(agent);
    const pid = Number(readFileSync(`${containerCgroup(agent, 'memory')}/cgroup.procs`, 'utf8').trim().split('\n')[0]);
    assert.ok(pid > 0, 'the agent\'s host pid');
    const owned = bpfIdsOf(pid);
    assert.ok(owned.progs.length > 0, 'the agent holds BPF programs');
    // the node's interfaces: the bridge, the pods' host-side veths on it, the default route's
    const names = (args: string[]): string[] => sh('ip', ['-o', ...args]).split('\n').map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1]).filter((n): n is string => Boolean(n));
    const defaultDev = /dev (\S+)/.exec(sh('ip', ['-4', 'route', 'show', 'default']))?.[1];
    const ifnames = [BRIDGE, ...names(['link', 'show', 'master', BRIDGE]), ...(defaultDev ? [defaultDev] : [])];
    const pinned = (): string[] => (existsSync('/sys/fs/bpf') ? sh('find', ['/sys/fs/bpf', '-mindepth', '1']).split('\n').filter(Boolean) : []);
    const pinned0 = pinned();
    // A Capture the operator ran carries its finalizer until the operator cleans it up: docs/install.md
    // deletes the captures while the operator still runs (without it the CRD deletion below would wait
    // for ever on the finalizer).
    const capNs = 'rn-opcap';
    const hadLogDir = existsSync('/var/log/retina');
    await createNamespace(client, capNs);
    await client.request('POST', collectionPath(resources.captures, capNs), {
      body: { apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', metadata: { name: 'opcap', namespace: capNs }, spec: {
        captureConfiguration: { captureTarget: { nodeSelector: { matchLabels: { 'kubernetes.io/hostname': NODE_NAME } } }, captureOption: { duration: '2s' } },
        outputConfiguration: { hostPath: 'rn-opcap' },
      } },
    });
    await eventually('the operator\'s finalizer on the Capture', 60_000, async () =>
      ((await client.request<KubeObject & { metadata: { finalizers?: string[] } }>('GET', objectPath(resources.captures, capNs, 'opcap'))).metadata.finalizers ?? []).length > 0, 500);
    for (const c of await listAll<KubeObject>(client, resources.captures)) await client.request('DELETE', objectPath(resources.captures, c.metadata.namespace, c.metadata.name));
    await eventually('every Capture gone (the operator removed its finalizer)', 120_000, async () => (await listAll<KubeObject>(client, resources.captures)).length === 0, 500);
    // The namespace is the test's own: it is deleted, not waited for. Its deletion is the namespace
    // controller's, which requeues a namespace whose pods were still terminating with its own back-off
    // (estimate + up to 60 s); with every Capture gone (above) nothing of ours is left in it. Waiting for
    // it here failed this case now and then (Terminating past 120 s with every condition "done").
    await client.request('DELETE', objectPath(resources.namespaces, undefined, capNs)).catch(() => undefined);
    rmSync(hadLogDir ? '/var/log/retina/captures/rn-opcap' : '/var/log/retina', { recursive: true, force: true });
    const un = await helm(['uninstall', RELEASE, '-n', RELEASE_NS, '--wait', '--timeout', '5m']);
    assert.equal(un.code, 0, `helm uninstall: ${un.stderr}`);
    await eventually('the agent pod gone', 120_000, async () => (await agentPods(client)).length === 0, 500);
    const tcOnOurs = ifnames.filter((i) => { try { sh('ip', ['link', 'show', i]); return true; } catch { return false; } });
    assert.deepEqual(await leftoversAfterStop(undefined, tcOnOurs, owned, 10_000), []);
    assert.deepEqual(pinned().filter((f) => !pinned0.includes(f) || /retina/i.test(f)), [], 'no pinned map of ours under /sys/fs/bpf');
    assert.deepEqual(hooksOnNode([]).strayFilters, [], 'no tc filter of ours on any of the node\'s interfaces');
    // CRDs stay with `helm uninstall` (Helm's crds/); docs/install.md's second step deletes them and
    // every object of their kinds: it must finish with the operator gone (no finalizer left to hang it).
    const left = async (): Promise<string[]> => (await Promise.all([resources.retinaEndpoints, resources.metricsConfigurations, resources.captures].map(async (r) =>
      (await listAll<KubeObject>(client, r).catch(() => [])).map((o) => `${r.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`)))).flat();
    const kept = await left();
    t.diagnostic(`after helm uninstall, objects of our kinds: ${kept.join(', ') || 'none'}`);
    const live = new Set((await listAll<Pod>(client, resources.pods)).map((p) => `RetinaEndpoint ${p.metadata.namespace ?? ''}/${p.metadata.name}`));
    assert.deepEqual(kept.filter((k) => k.startsWith('RetinaEndpoint ') && !live.has(k)), [], 'no RetinaEndpoint of a pod that is gone (the release\'s own pods included)');
    const crds = ['captures.retina.sh', 'metricsconfigurations.retina.sh', 'retinaendpoints.retina.sh', 'retinaendpointslices.retina.sh'];
    for (const c of crds) await client.request('DELETE', objectPath(resources.crds, undefined, c));
    await eventually('the CRDs and every object of theirs gone', 120_000, async () => {
      const still = await Promise.all(crds.map((c) => client.request('GET', objectPath(resources.crds, undefined, c)).then(() => c, () => undefined)));
      return still.every((c) => c === undefined);
    }, 500).catch(async (e: unknown) => assert.fail(`${String(e)}: ${(await left()).join(', ')}`));
  });
}
