import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TRACE_KINDS } from '../../debug/index.js';
import { parseFlags, UsageError } from '../args.js';
import { version } from '../command.js';
import { BPFTRACE_FLAGS, bpftraceRequest } from './bpftrace.js';
import { SHELL_FLAGS, shellRequest } from './shell.js';

const shell = (env: NodeJS.ProcessEnv, ...argv: string[]): ReturnType<typeof shellRequest> => shellRequest(parseFlags(argv, SHELL_FLAGS), env, 'ns1');
const trace = (...argv: string[]): ReturnType<typeof bpftraceRequest> => bpftraceRequest(parseFlags(argv, BPFTRACE_FLAGS), {});

test("shell: Retina's flags and short letters, its defaults, node and pod targets", () => {
  const r = shell({}, 'node1');
  assert.deepEqual(r.target, { kind: 'node', node: 'node1' });
  assert.equal(r.timeoutMs, 30_000);
  assert.equal(r.namespace, 'ns1');
  assert.deepEqual(r.options, {
    image: `ghcr.io/retina-ts/retina-ts-shell:${version()}`, capabilities: [], mountHostFilesystem: false, allowHostFilesystemWrite: false,
    hostPid: false, appArmorUnconfined: false, seccompUnconfined: false,
  });
  const all = shell({}, 'pods/web-1', '-m', '-w', '--host-pid', '-c', 'NET_ADMIN,cap_net_raw', '--apparmor-unconfined', '--seccomp-unconfined', '--timeout', '2m');
  assert.deepEqual(all.target, { kind: 'pod', pod: 'web-1' });
  assert.equal(all.timeoutMs, 120_000);
  assert.deepEqual(all.options.capabilities, ['NET_ADMIN', 'NET_RAW']);
  assert.ok(all.options.mountHostFilesystem && all.options.allowHostFilesystemWrite && all.options.hostPid && all.options.appArmorUnconfined && all.options.seccompUnconfined);
  assert.deepEqual(shell({}, 'node/n2').target, { kind: 'node', node: 'n2' });
  assert.deepEqual(shell({}, 'po/p').target, { kind: 'pod', pod: 'p' });
});

test('shell image: --image, else the repo and version flags, else their environment variables, else the default', () => {
  assert.equal(shell({ RETINA_SHELL_IMAGE_REPO: 'r.example/s', RETINA_SHELL_IMAGE_VERSION: 'v9' }, 'n').options.image, 'r.example/s:v9');
  assert.equal(shell({ RETINA_SHELL_IMAGE_REPO: 'r.example/s' }, 'n', '--retina-shell-image-repo', 'f.example/s', '--retina-shell-image-version', 't').options.image, 'f.example/s:t');
  assert.equal(shell({ RETINA_SHELL_IMAGE_REPO: 'r.example/s' }, 'n', '--image', 'docker.io/library/retina-ts-shell:0.1.0').options.image, 'docker.io/library/retina-ts-shell:0.1.0');
});

test('shell: bad input is named', () => {
  assert.throws(() => shell({}), (e: unknown) => e instanceof UsageError && /expected one NODE or pods\/NAME, got 0/.test(e.message));
  assert.throws(() => shell({}, 'a', 'b'), /got 2/);
  assert.throws(() => shell({}, 'deployments/x'), /unsupported resource type "deployments"/);
  assert.throws(() => shell({}, 'n', '--timeout', 'soon'), /--timeout: "soon" is not a positive duration/);
  assert.throws(() => shell({}, 'n', '-c', 'NET ADMIN'), /--capabilities: "NET ADMIN" is not a capability name/);
});

test("bpftrace: every event kind unless some are named; Retina's flags; IPv4 and IPv6 filters", () => {
  const d = trace('node1');
  assert.deepEqual([...d.request.kinds], TRACE_KINDS);
  assert.equal(d.json, false);
  assert.equal(d.request.durationSeconds, 0);
  assert.equal(d.request.startupTimeoutMs, 30_000);
  const r = trace('node1', '--drops', '--rst', '--ip', '10.244.1.15,fd00::5', '--cidr', '10.244.0.0/16', '--duration', '1m', '-o', 'json', '--startup-timeout', '2m');
  assert.deepEqual([...r.request.kinds], ['drops', 'rst']);
  assert.deepEqual(r.request.filters.map((f) => [f.family, f.text]), [[4, '10.244.1.15'], [6, 'fd00::5'], [4, '10.244.0.0/16']]);
  assert.equal(r.request.durationSeconds, 60);
  assert.equal(r.json, true);
  assert.deepEqual([...trace('n', '--all', '--drops').request.kinds], TRACE_KINDS);
  assert.deepEqual([...trace('n', '--nfqueue-drops').request.kinds], ['nfqueue']);
});

test('bpftrace: bad input is named', () => {
  assert.throws(() => trace('pods/x'), /bpftrace traces nodes, not pods/);
  assert.throws(() => trace('n', '--ip', '10.0.0'), /--ip: "10.0.0" is not an IPv4 or IPv6 address/);
  assert.throws(() => trace('n', '--ip', '10.0.0.1/8'), /--ip: "10.0.0.1\/8"/);
  assert.throws(() => trace('n', '--cidr', '10.0.0.0/33'), /--cidr: "10.0.0.0\/33" is not a CIDR/);
  assert.throws(() => trace('n', '-o', 'yaml'), /--output: "yaml" is not table or json/);
  assert.throws(() => trace('n', '--duration', '500ms'), /--duration: "500ms"/);
  assert.throws(() => trace(), /expected one NODE, got 0/);
});
