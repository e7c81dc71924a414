import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CaptureSpec, CaptureTrigger } from '../k8s/index.js';
import { decodeWorkloadEnv } from './env.js';
import { captureJobs, nodeJob, TriggerOnWindowsError } from './job.js';
import { captureRunMs, validateCaptureSpec } from './spec.js';
import { flowMatchesTrigger, triggerFlowOf } from './trigger-hubble.js';
import { DEFAULT_HUBBLE_ADDRESS, resolveTrigger, triggerFlowFilters, validateTrigger } from './trigger.js';

const spec = (trigger: unknown, opt: Record<string, unknown> = {}): CaptureSpec => ({
  captureConfiguration: { captureTarget: { nodeSelector: { matchLabels: { 'kubernetes.io/os': 'linux' } } }, trigger: trigger as CaptureTrigger, captureOption: opt },
  outputConfiguration: { hostPath: 'retina' },
});
const AT = 'spec.captureConfiguration.trigger';

test('a trigger is valid with a drop reason, a pod, or flow-filter fields, and its defaults are resolved', () => {
  assert.deepEqual(validateCaptureSpec(spec({ dropReason: 'NETFILTER_DROP', pod: 'rn-b/srv' })), []);
  assert.deepEqual(validateCaptureSpec(spec({ flowFilter: { destinationPort: 9999, protocol: 'UDP' }, preTrigger: { duration: '2s' }, postTriggerDuration: '500ms' })), []);
  const r = resolveTrigger({ dropReason: 'NO_SOCKET' });
  assert.deepEqual(r.preTrigger, { packets: 100, durationMs: undefined });
  assert.equal(r.postTriggerMs, 10_000);
  assert.equal(r.hubbleAddress, DEFAULT_HUBBLE_ADDRESS);
  assert.deepEqual(resolveTrigger({ pod: 'a/b', preTrigger: { duration: '1m' }, postTriggerDuration: '3s' }).preTrigger, { packets: undefined, durationMs: 60_000 });
});

test('every bad trigger field is named, all at once', () => {
  const problems = validateCaptureSpec(spec({
    dropReason: 'netfilter drop', pod: 'nopod', flowFilter: { verdict: 'LOST', sourceIP: '10.0.0.300', destinationPod: 'x', protocol: 'SCTP', destinationPort: 70000, colour: 'red' },
    preTrigger: { packets: 10, duration: '1s' }, postTriggerDuration: '11m', hubbleAddress: 'http://x', extra: 1,
  }));
  for (const field of ['dropReason', 'pod', 'flowFilter.verdict', 'flowFilter.sourceIP', 'flowFilter.destinationPod', 'flowFilter.protocol', 'flowFilter.destinationPort',
    'flowFilter.colour', 'preTrigger', 'postTriggerDuration', 'hubbleAddress', 'extra']) {
    assert.ok(problems.some((p) => p.startsWith(`${AT}.${field}:`)), `${field} named in:\n${problems.join('\n')}`);
  }
  assert.deepEqual(validateTrigger({}), [`${AT}: set at least one of dropReason, pod, flowFilter (else every flow of the node would trigger)`]);
  assert.deepEqual(validateTrigger({ preTrigger: { duration: 'soon' }, pod: 'a/b' }), [`${AT}.preTrigger.duration: "soon" is not a duration (Go syntax: 500ms, 30s, 1m)`]);
  assert.deepEqual(validateTrigger({ preTrigger: { packets: -1 }, pod: 'a/b' }), [`${AT}.preTrigger.packets: -1; an integer from 0 to 1000000`]);
  assert.deepEqual(validateTrigger({ dropReason: 'NETFILTER_DROP', flowFilter: { verdict: 'FORWARDED' } }), [`${AT}.flowFilter.verdict: FORWARDED contradicts dropReason (a drop reason is only seen on DROPPED flows)`]);
  assert.deepEqual(validateTrigger('x'), [`${AT}: must be an object`]);
  // one stream, one file
  const opts = validateCaptureSpec(spec({ pod: 'a/b' }, { interfaces: ['eth0', 'eth1'], fileCount: 3 }));
  assert.ok(opts.some((p) => p.startsWith('spec.captureConfiguration.captureOption.interfaces: a triggered capture')), opts.join('\n'));
  assert.ok(opts.some((p) => p.startsWith('spec.captureConfiguration.captureOption.fileCount: a triggered capture')), opts.join('\n'));
});

test('the agent is asked for the trigger\'s flows: a pod from either side, a drop reason as DROPPED', () => {
  assert.deepEqual(triggerFlowFilters(resolveTrigger({ dropReason: 'NETFILTER_DROP', pod: 'rn-b/srv' })), [
    { verdict: ['DROPPED'], source_pod: ['rn-b/srv'] }, { verdict: ['DROPPED'], destination_pod: ['rn-b/srv'] },
  ]);
  assert.deepEqual(triggerFlowFilters(resolveTrigger({ flowFilter: { sourcePod: 'a/c', protocol: 'UDP', destinationPort: 53, destinationIP: 'fd00::1' }, pod: 'a/b' })), [
    { source_pod: ['a/c'], protocol: ['udp'], destination_port: ['53'], destination_ip: ['fd00::1'], destination_pod: ['a/b'] },
  ]);
  const t = resolveTrigger({ dropReason: 'NETFILTER_DROP' });
  const flow = triggerFlowOf({ verdict: 'DROPPED', Summary: 'drop reason: NETFILTER_DROP', time: { seconds: 1700000000, nanos: 5e8 }, IP: { source: '10.0.0.1', destination: '10.0.0.2' },
    l4: { UDP: { source_port: 40000, destination_port: 9999 } }, source: { namespace: 'rn-a', pod_name: 'cli-1' } });
  assert.deepEqual(flow, { timeMs: 1700000000500, verdict: 'DROPPED', dropReason: 'NETFILTER_DROP', source: '10.0.0.1', destination: '10.0.0.2', protocol: 'UDP', sourcePort: 40000, destinationPort: 9999, sourcePod: 'rn-a/cli-1', destinationPod: undefined });
  assert.equal(flowMatchesTrigger(flow, t), true);
  assert.equal(flowMatchesTrigger({ ...flow, dropReason: 'NO_SOCKET' }, t), false);
});

test('the Job carries the trigger and runs for the armed duration plus the post-trigger window; the workload reads it back', () => {
  const s = spec({ dropReason: 'NETFILTER_DROP', pod: 'rn-b/srv', postTriggerDuration: '5s', hubbleAddress: 'unix:///var/run/retina/hubble.sock' }, { duration: '30s' });
  assert.equal(captureRunMs(s), 35_000);
  const job = nodeJob({ name: 'trig', namespace: 'default', spec: s }, { name: 'n1', os: 'linux' }, {
    linuxImage: 'img', windowsImage: 'wimg', hostPathBaseDir: '/var/log/retina/captures', jobNumLimit: 0, startTimestamp: '2026-01-01T00:00:00Z', deadlineSlackSeconds: 60,
  }) as unknown as { spec: { activeDeadlineSeconds: number; template: { spec: { containers: { env: { name: string; value?: string }[]; volumeMounts: { name: string; mountPath: string }[] }[] } } } };
  assert.equal(job.spec.activeDeadlineSeconds, 95);
  const c = job.spec.template.spec.containers[0]!;
  const env = Object.fromEntries(c.env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]));
  assert.ok(c.volumeMounts.some((m) => m.name === 'hubble-socket' && m.mountPath === '/var/run/retina'), 'the socket\'s folder mounted');
  const w = decodeWorkloadEnv({ ...env, NODE_HOST_NAME: 'n1' });
  assert.equal(w.trigger?.dropReason, 'NETFILTER_DROP');
  assert.equal(w.trigger?.postTriggerMs, 5000);
  assert.throws(() => decodeWorkloadEnv({ ...env, NODE_HOST_NAME: 'n1', CAPTURE_TRIGGER: '{"pod":"x"}', CAPTURE_FILE_COUNT: '2' }), (e: Error) =>
    e.message.includes('CAPTURE_TRIGGER.pod: "x" is not namespace/name') && e.message.includes('CAPTURE_FILE_COUNT: a triggered capture'));
  assert.throws(() => decodeWorkloadEnv({ ...env, NODE_HOST_NAME: 'n1', CAPTURE_TRIGGER: '{' }), /CAPTURE_TRIGGER is not JSON/);
});

test('a trigger on a Windows node is refused before any Job is made, naming the nodes', () => {
  const opts = { linuxImage: 'img', windowsImage: 'wimg', hostPathBaseDir: '/b', jobNumLimit: 0, startTimestamp: '2026-01-01T00:00:00Z', deadlineSlackSeconds: 60 };
  const s = spec({ dropReason: 'DROPPED' });
  assert.throws(() => captureJobs({ name: 'c', namespace: 'd', spec: s }, [{ name: 'l1', os: 'linux' }, { name: 'w1', os: 'windows' }], opts),
    (e: unknown) => e instanceof TriggerOnWindowsError && /Linux nodes only; Windows target node\(s\) w1/.test(e.message));
  assert.equal(captureJobs({ name: 'c', namespace: 'd', spec: { ...s, captureConfiguration: { ...s.captureConfiguration, trigger: undefined } } }, [{ name: 'w1', os: 'windows' }], opts).length, 1);
});
