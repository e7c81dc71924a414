#!/usr/bin/env node
// Plays the kubelet for one capture pod on the test control plane (see README, Packet capture, walkthrough).
// The code is test/capture/pod-runner.ts (built by `make build`), the same that capture-e2e.test.ts uses.
const { runPodMain } = await import(new URL('../../dist/test/capture/pod-runner.js', import.meta.url).href);
process.exitCode = await runPodMain(process.argv.slice(2));
