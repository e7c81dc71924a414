import assert from 'node:assert/strict';
import { test } from 'node:test';
import { capabilityNames, ephemeralShellContainer, nodeShellPod, tracePod, TRACE_CAPABILITIES, type ShellOptions } from './pods.js';
import { parseTarget } from './shell.js';

const base: ShellOptions = {
  image: 'img:1', capabilities: ['NET_ADMIN'], mountHostFilesystem: false, allowHostFilesystemWrite: false, hostPid: false, appArmorUnconfined: false, seccompUnconfined: false,
};

test("the node shell pod: Retina's manifest (host network, ALL dropped, the asked capabilities), never restarted, stdin and a TTY", () => {
  const p = nodeShellPod('retina-shell-abcde', 'ns1', 'node1', base);
  assert.equal(p.metadata.labels['app'], 'retina-shell');
  assert.equal(p.spec['nodeName'], 'node1');
  assert.equal(p.spec['hostNetwork'], true);
  assert.equal(p.spec['hostPID'], false);
  assert.equal(p.spec['restartPolicy'], 'Never');
  assert.deepEqual(p.spec['tolerations'], [{ operator: 'Exists' }]);
  const c = p.spec.containers[0] as Record<string, unknown>;
  assert.deepEqual([c['image'], c['stdin'], c['stdinOnce'], c['tty']], ['img:1', true, true, true]);
  assert.deepEqual(c['securityContext'], { capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } });
  assert.equal(p.spec['volumes'], undefined);
});

test('the node shell pod: host filesystem read-only or writable, its /run, host PID, AppArmor and seccomp unconfined', () => {
  const ro = nodeShellPod('n', 'ns', 'node1', { ...base, mountHostFilesystem: true, hostPid: true, appArmorUnconfined: true, seccompUnconfined: true });
  const c = ro.spec.containers[0] as { volumeMounts: unknown; securityContext: Record<string, unknown> };
  assert.deepEqual(c.volumeMounts, [{ name: 'host-filesystem', mountPath: '/host', readOnly: true }, { name: 'run', mountPath: '/run' }]);
  assert.deepEqual(ro.spec['volumes'], [{ name: 'host-filesystem', hostPath: { path: '/' } }, { name: 'run', hostPath: { path: '/run' } }]);
  assert.equal(ro.spec['hostPID'], true);
  assert.deepEqual(c.securityContext['appArmorProfile'], { type: 'Unconfined' });
  assert.deepEqual(c.securityContext['seccompProfile'], { type: 'Unconfined' });
  const rw = nodeShellPod('n', 'ns', 'node1', { ...base, allowHostFilesystemWrite: true });
  assert.deepEqual((rw.spec.containers[0] as { volumeMounts: unknown[] }).volumeMounts[0], { name: 'host-filesystem', mountPath: '/host', readOnly: false });
});

test('the ephemeral container: capabilities only (host options apply to nodes), ends with its stdin', () => {
  const c = ephemeralShellContainer('retina-shell-x', { ...base, mountHostFilesystem: true, hostPid: true, appArmorUnconfined: true, seccompUnconfined: true });
  assert.deepEqual(c, { name: 'retina-shell-x', image: 'img:1', imagePullPolicy: 'IfNotPresent', stdin: true, stdinOnce: true, tty: true, securityContext: { capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] } } });
  // a session that is no terminal (a script's stdin): no TTY in either, stdin still once
  assert.deepEqual([ephemeralShellContainer('x', base, false)['tty'], ephemeralShellContainer('x', base, false)['stdinOnce']], [false, true]);
  const c2 = nodeShellPod('n', 'ns', 'node1', base, false).spec.containers[0] ?? {};
  assert.deepEqual([c2['tty'], c2['stdin'], c2['stdinOnce']], [false, true, true]);
});

test('the trace pod: host network and PID, bpftrace\'s capabilities without SYS_RESOURCE, unconfined, tracefs from the host', () => {
  const p = tracePod('retina-trace-x', 'ns', 'node1', 'img:1');
  assert.equal(p.metadata.labels['app'], 'retina-trace');
  assert.equal(p.spec['hostNetwork'], true);
  assert.equal(p.spec['hostPID'], true);
  const c = p.spec.containers[0] as { command: string[]; securityContext: Record<string, unknown>; volumeMounts: unknown };
  assert.deepEqual(c.command, ['sleep', 'infinity']);
  assert.deepEqual(c.securityContext, { capabilities: { drop: ['ALL'], add: [...TRACE_CAPABILITIES] }, appArmorProfile: { type: 'Unconfined' }, seccompProfile: { type: 'Unconfined' }, privileged: false });
  assert.ok(!TRACE_CAPABILITIES.includes('SYS_RESOURCE'));
  assert.deepEqual(c.volumeMounts, [{ name: 'tracefs', mountPath: '/sys/kernel/tracing', readOnly: true }]);
});

test('targets and capability names', () => {
  assert.deepEqual(parseTarget('nodes/a'), { kind: 'node', node: 'a' });
  assert.deepEqual(parseTarget('pods/b'), { kind: 'pod', pod: 'b' });
  assert.throws(() => parseTarget('pods/'), /expected TYPE\/NAME/);
  assert.deepEqual(capabilityNames(['cap_sys_admin', ' BPF ']), ['SYS_ADMIN', 'BPF']);
});
