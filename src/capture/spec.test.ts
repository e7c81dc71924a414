import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CaptureSpec } from '../k8s/index.js';
import { compileFilters, goDuration, netshFilter, parseFilterEntry, resolveHostPath, tcpdumpFlags, validateCaptureSpec } from './spec.js';

const base = (): CaptureSpec => ({
  captureConfiguration: { captureTarget: { nodeSelector: { matchLabels: { 'kubernetes.io/os': 'linux' } } } },
  outputConfiguration: { hostPath: 'retina' },
});

test('filter entries: IP, IP:port, *:port, IP:*, port, IPv6 bare and bracketed', () => {
  assert.deepEqual(parseFilterEntry('10.0.0.1'), { ip: '10.0.0.1', port: undefined });
  assert.deepEqual(parseFilterEntry('10.0.0.1:80'), { ip: '10.0.0.1', port: 80 });
  assert.deepEqual(parseFilterEntry('*:53'), { ip: undefined, port: 53 });
  assert.deepEqual(parseFilterEntry('10.0.0.1:*'), { ip: '10.0.0.1', port: undefined });
  assert.deepEqual(parseFilterEntry('443'), { ip: undefined, port: 443 });
  assert.deepEqual(parseFilterEntry('fd00::1'), { ip: 'fd00::1', port: undefined });
  assert.deepEqual(parseFilterEntry('[fd00::1]:8080'), { ip: 'fd00::1', port: 8080 });
  assert.deepEqual(parseFilterEntry('[fd00::1]:*'), { ip: 'fd00::1', port: undefined });
  for (const bad of ['', '*:*', '10.0.0.300', '10.0.0.1:0', '10.0.0.1:70000', 'host:80', '[10.0.0.1]:80', 'fd00::1:80x', '-i eth0', '80/tcp']) {
    assert.equal(parseFilterEntry(bad), undefined, bad);
  }
});

test("filters compile as Retina's: (inc1 or inc2) and not (exc1 or exc2)", () => {
  assert.equal(compileFilters(['10.0.0.1:80', '*:53'], ['10.0.0.9', '[fd00::2]:22']),
    '((host 10.0.0.1 and port 80) or port 53) and not (host 10.0.0.9 or (host fd00::2 and port 22))');
  assert.equal(compileFilters(['10.0.0.1'], []), '(host 10.0.0.1)');
  assert.equal(compileFilters([], ['443']), 'not (port 443)');
  assert.equal(compileFilters([], []), '');
});

test('validation names each bad field', () => {
  const s = base();
  s.captureConfiguration.filters = { include: ['10.0.0.1:99999'], exclude: ['ok', '*:22'] };
  s.captureConfiguration.tcpdumpFilter = 'tcp -w /etc/x';
  s.captureConfiguration.captureOption = { duration: '10 minutes', pcapFilter: 'x'.repeat(1025), sourceIPs: ['1.2.3.4', 'nope'], destinationIPs: Array(101).fill('10.0.0.1') };
  s.outputConfiguration.hostPath = '../../etc';
  const e = validateCaptureSpec(s);
  const has = (re: RegExp): void => assert.ok(e.some((x) => re.test(x)), `${re} in\n${e.join('\n')}`);
  has(/^spec\.captureConfiguration\.filters\.include\[0\]: "10\.0\.0\.1:99999"/);
  has(/^spec\.captureConfiguration\.filters\.exclude\[0\]: "ok"/);
  has(/^spec\.captureConfiguration\.tcpdumpFilter: "-w" looks like a tcpdump flag/);
  has(/^spec\.captureConfiguration\.captureOption\.duration: "10 minutes" is not a duration/);
  has(/^spec\.captureConfiguration\.captureOption\.pcapFilter: 1025 characters; at most 1024/);
  has(/^spec\.captureConfiguration\.captureOption\.sourceIPs\[1\]: "nope"/);
  has(/^spec\.captureConfiguration\.captureOption\.destinationIPs: 101 addresses; at most 100/);
  has(/^spec\.outputConfiguration\.hostPath: "\.\.\/\.\.\/etc"/);
  assert.equal(e.length, 8, e.join('\n'));
  assert.deepEqual(validateCaptureSpec(base()), []);
});

test('target kinds are exclusive; absolute host paths are refused', () => {
  const s = base();
  s.captureConfiguration.captureTarget.podSelector = { matchLabels: { app: 'x' } };
  assert.match(validateCaptureSpec(s).join('\n'), /nodeSelector cannot be combined/);
  const n = base();
  n.captureConfiguration.captureTarget = { podNames: ['a'], nodeSelector: {} };
  assert.match(validateCaptureSpec(n).join('\n'), /podNames cannot be combined/);
  const none = base();
  none.captureConfiguration.captureTarget = {};
  assert.match(validateCaptureSpec(none).join('\n'), /set one of nodeSelector/);
  const abs = base();
  abs.outputConfiguration.hostPath = '/etc';
  assert.match(validateCaptureSpec(abs).join('\n'), /spec\.outputConfiguration\.hostPath: "\/etc"/);
  assert.equal(resolveHostPath('/var/log/retina/captures', 'team/a'), '/var/log/retina/captures/team/a');
  assert.throws(() => resolveHostPath('/b', 'a/../../x'));
});

test('durations print as Go does; flags follow the options; netsh lists v4 and v6', () => {
  assert.equal(goDuration(60_000), '1m0s');
  assert.equal(goDuration(30_000), '30s');
  assert.equal(goDuration(3_661_000), '1h1m1s');
  const s = base();
  s.captureConfiguration.captureOption = { noPromiscuous: true, packetBuffered: true, noResolvePort: true, verbosity: 'extra', printDataFormat: 'ascii', timestampFormat: 'date', dontVerifyChecksum: true };
  assert.deepEqual(tcpdumpFlags(s), ['-p', '-U', '-nn', '-vv', '-X', '-tttt', '-K']);
  assert.equal(netshFilter(['10.0.0.1', 'fd00::1', '10.0.0.2']), 'IPv4.Address=(10.0.0.1,10.0.0.2) IPv6.Address=(fd00::1)');
});
