/**
 * The chart, the image and the agent on a real kubelet (issue 23): `make image`'s archive imported
 * into the real node's containerd, `helm install` of charts/retina with only image.* overridden, and
 * the operator Deployment and the Linux agent DaemonSet Running and Ready as real pods through the
 * chart's own probes, RBAC, mounts, capabilities and in-cluster config (the ServiceAccount admission
 * gives them projected tokens; the API server is reached through the `kubernetes` Service, i.e. kube-proxy).
 * Needs root and the node's tools (make node-bins); never skips: a node that cannot come up fails.
 *
 * One file brings the node up; the cases are in area modules (test/node/real-node/), registered here
 * in the order they run. Why not one test file per area: the cases build on each other (the install,
 * then the advanced-remote upgrade with the test pods and the Services every traffic, DNS, capture,
 * Hubble and `why` case uses, then the lifecycle cases that roll and finally uninstall the release, then the
 * hardened install), and the machine has one real node at a time (node.ts's locks). A file per area
 * would bring the node up and down again and repeat the set-up it needs: node up 11-14 s and down 8 s
 * (docs/real-node.md), the image import, `helm install` to Ready 14-19 s, and for most areas the
 * advanced-remote upgrade with its pods and RetinaEndpoints, so about 40 s to 1.5 min more per file
 * on a suite of 5-6 minutes.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, before, describe } from 'node:test';
import { importImage, startNode } from './node.js';
import { captureCases } from './real-node/capture.js';
import { chartCases } from './real-node/chart.js';
import { debugCases } from './real-node/debug.js';
import { dnsCases } from './real-node/dns.js';
import { hardenedCases } from './real-node/hardened.js';
import { hubbleCases } from './real-node/hubble.js';
import { lifecycleCases } from './real-node/lifecycle.js';
import { observeCases } from './real-node/observe.js';
import { podTrafficCases } from './real-node/pod-traffic.js';
import { resourceCases } from './real-node/resources.js';
import { newSuite } from './real-node/suite.js';
import { triggeredCaptureCases } from './real-node/triggered-capture.js';
import { whyCases } from './real-node/why.js';
import { IMAGE_ARCHIVE, IMAGE_VERSION } from './workloads.js';

describe('real node: helm install of the chart with the real image', { timeout: 1_500_000 }, () => {
  const s = newSuite();

  before(async () => {
    if (!existsSync(IMAGE_ARCHIVE)) throw new Error(`${IMAGE_ARCHIVE} is missing: run make image`);
    s.node = await startNode();
    s.client = s.node.client;
    const out = await importImage(IMAGE_ARCHIVE);
    s.imageRef = `docker.io/library/retina-ts:${IMAGE_VERSION}`;
    assert.ok(out.split('\n').includes(s.imageRef), `containerd has no ${s.imageRef} after the import: ${out}`);
  });

  after(async () => {
    await s.node?.[Symbol.asyncDispose]();
  });

  chartCases(s); // helm install; helm upgrade to advanced-remote with the test pods
  podTrafficCases(s); // a drop, pod to pod (IPv4, IPv6), through ClusterIP Services (IPv4, IPv6)
  dnsCases(s); // DNS to the server pod; cluster DNS
  observeCases(s); // a new pod's first series; Prometheus with the chart's job; diagnose
  captureCases(s); // kubectl-retina capture create and download
  debugCases(s); // kubectl-retina bpftrace and shell against scripted faults
  resourceCases(s); // the agent pod's cgroup: RSS and CPU
  hubbleCases(s); // Hubble Relay through the chart
  triggeredCaptureCases(s); // a capture started by the first drop (the agent's Hubble, on since the Hubble case)
  whyCases(s); // kubectl-retina why against faults of our own: an nftables deny, a closed port, NXDOMAIN, a Service without endpoints
  lifecycleCases(s); // pod deleted, container killed, upgrade, uninstall
  hardenedCases(s); // the hardened profile
});
