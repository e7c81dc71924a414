import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CaptureSpec } from '../k8s/index.js';
import { JobNumLimitError, captureJobs, captureSecrets, referencedSecrets, type TranslateOptions } from './job.js';

const opts: TranslateOptions = {
  linuxImage: 'img/linux:1', windowsImage: 'img/win:1', hostPathBaseDir: '/var/log/retina/captures', jobNumLimit: 0,
  startTimestamp: '2026-11-23T10:00:00Z', deadlineSlackSeconds: 300,
};

const spec = (): CaptureSpec => ({
  captureConfiguration: {
    captureTarget: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'web' } } },
    filters: { include: ['*:80'] },
    captureOption: { duration: '2m', maxCaptureSize: 50, sourceIPs: ['10.0.0.5'] },
  },
  outputConfiguration: { hostPath: 'retina', blobUpload: 'cap-blob-upload-secret', s3Upload: { bucket: 'b', secretName: 'cap-s3-upload-secret', region: 'r', path: 'p' } },
});

type Job = { metadata: Record<string, unknown>; spec: { activeDeadlineSeconds: number; backoffLimit: number; template: { metadata: { labels: Record<string, string>; annotations: Record<string, string> }; spec: Record<string, unknown> & { containers: { env: { name: string; value?: string; valueFrom?: unknown }[]; securityContext?: unknown; image: string; volumeMounts: { mountPath: string }[] }[] } } } };

test('one Job per node: Linux and Windows shapes, env contract, pod IPs as filters', () => {
  const jobs = captureJobs({ name: 'cap', namespace: 'ns1', spec: spec() }, [
    { name: 'win-0', os: 'windows', podIPs: ['10.1.0.7', 'fd00::7'] },
    { name: 'lin-0', os: 'linux', podIPs: ['10.1.0.5', 'fd00::5'] },
  ], { ...opts, owner: { apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', name: 'cap', uid: 'u1' } }) as unknown as Job[];
  assert.equal(jobs.length, 2);
  const [lin, win] = jobs as [Job, Job];
  assert.equal(lin.metadata['generateName'], 'cap-');
  assert.deepEqual(lin.metadata['labels'], { 'retina.sh/app': 'capture', 'capture-name': 'cap' });
  assert.deepEqual(lin.spec.template.metadata.labels, { 'retina.sh/app': 'capture', 'capture-name': 'cap' });
  assert.deepEqual(lin.metadata['ownerReferences'], [{ apiVersion: 'retina.sh/v1alpha1', kind: 'Capture', name: 'cap', uid: 'u1', controller: true, blockOwnerDeletion: true }]);
  assert.equal(lin.spec.backoffLimit, 0);
  assert.equal(lin.spec.activeDeadlineSeconds, 120 + 300);
  const ps = lin.spec.template.spec;
  assert.equal(ps['nodeName'], 'lin-0');
  assert.equal(ps['hostNetwork'], true);
  assert.equal(ps['restartPolicy'], 'Never');
  assert.equal(ps['terminationGracePeriodSeconds'], 1800);
  const c = ps.containers[0] as Job['spec']['template']['spec']['containers'][0];
  assert.equal(c.image, 'img/linux:1');
  assert.deepEqual(c.securityContext, { runAsUser: 0, capabilities: { add: ['NET_ADMIN', 'NET_RAW', 'SYS_ADMIN'] } });
  const env = Object.fromEntries(c.env.map((e) => [e.name, e.value ?? e.valueFrom]));
  assert.equal(env['CAPTURE_NAME'], 'cap');
  assert.deepEqual(env['NODE_HOST_NAME'], { fieldRef: { apiVersion: 'v1', fieldPath: 'spec.nodeName' } });
  assert.equal(env['CAPTURE_DURATION'], '2m0s');
  assert.equal(env['CAPTURE_MAX_SIZE'], '50');
  assert.equal(env['CAPTURE_START_TIMESTAMP'], '2026-11-23T10:00:00Z');
  assert.equal(env['INCLUDE_METADATA'], 'true');
  assert.equal(env['TCPDUMP_FILTER'], '(host 10.1.0.5 or host fd00::5) and ((port 80)) and ((src host 10.0.0.5))');
  assert.equal(env['NETSH_FILTER'], 'IPv4.Address=(10.1.0.5) IPv6.Address=(fd00::5)');
  assert.equal(env['HOSTPATH'], '/var/log/retina/captures/retina');
  assert.equal(env['S3_BUCKET'], 'b');
  assert.equal(lin.spec.template.metadata.annotations['retina-capture-hostpath'], '/var/log/retina/captures/retina');
  assert.ok(!c.env.some((e) => /SECRET|KEY|URL/.test(e.name)), 'secrets are files, not env');
  assert.deepEqual(c.volumeMounts.map((m) => m.mountPath).sort(), ['/etc/blob-upload-secret', '/etc/s3-upload-secret', '/var/log/retina/captures/retina']);
  assert.deepEqual(referencedSecrets(lin as never).sort(), ['cap-blob-upload-secret', 'cap-s3-upload-secret']);
  const wps = win.spec.template.spec;
  assert.equal(wps['nodeName'], 'win-0');
  assert.deepEqual(wps['securityContext'], { windowsOptions: { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' } });
  assert.deepEqual(wps['nodeSelector'], { 'kubernetes.io/os': 'windows' });
  assert.equal((wps.containers[0] as { image: string }).image, 'img/win:1');
});

test('node targets: no pod-IP filter; the job limit refuses too many nodes', () => {
  const s = spec();
  s.captureConfiguration.captureTarget = { nodeSelector: {} };
  delete s.captureConfiguration.filters;
  delete s.captureConfiguration.captureOption;
  const [j] = captureJobs({ name: 'cap', namespace: 'ns1', spec: s }, [{ name: 'n0', os: 'linux' }], opts) as unknown as Job[];
  const env = Object.fromEntries((j as Job).spec.template.spec.containers[0]?.env.map((e) => [e.name, e.value]) ?? []);
  assert.equal(env['TCPDUMP_FILTER'], '');
  assert.equal(env['CAPTURE_DURATION'], '1m0s');
  assert.equal(env['CAPTURE_MAX_SIZE'], '100');
  assert.equal((j as Job).metadata['ownerReferences'], undefined);
  assert.throws(() => captureJobs({ name: 'cap', namespace: 'ns1', spec: s }, [{ name: 'a', os: 'linux' }, { name: 'b', os: 'linux' }, { name: 'c', os: 'linux' }], { ...opts, jobNumLimit: 2 }), JobNumLimitError);
  assert.equal(captureJobs({ name: 'cap', namespace: 'ns1', spec: s }, [{ name: 'a', os: 'linux' }, { name: 'b', os: 'linux' }], { ...opts, jobNumLimit: 2 }).length, 2);
});

test('secrets from CLI flags carry the capture labels and the contract keys', () => {
  const s = captureSecrets('cap', 'ns1', { blobUploadUrl: 'https://x/c?sig=1', s3AccessKeyId: 'id', s3SecretAccessKey: 'k' });
  assert.equal(s.blob?.metadata.name, 'cap-blob-upload-secret');
  assert.deepEqual(s.blob?.['stringData'], { 'blob-upload-url': 'https://x/c?sig=1' });
  assert.deepEqual(s.s3?.['stringData'], { 's3-access-key-id': 'id', 's3-secret-access-key': 'k' });
  assert.deepEqual(s.s3?.metadata.labels, { 'retina.sh/app': 'capture', 'capture-name': 'cap' });
  assert.deepEqual(captureSecrets('cap', 'ns1', {}), {});
});

test('what the translator writes is what retina-capture decodes (the env contract, both ends)', async () => {
  const { decodeWorkloadEnv } = await import('./env.js');
  const s = spec();
  s.captureConfiguration.captureOption = { ...s.captureConfiguration.captureOption, fileCount: 3, packetSize: 96, interfaces: ['eth0', 'eth1'], noPromiscuous: true, immediateMode: true, noResolvePort: true, verbosity: 'extra' };
  s.captureConfiguration.captureOption.pcapFilter = 'udp';
  s.captureConfiguration.tcpdumpFilter = 'not arp';
  const [lin] = captureJobs({ name: 'cap', namespace: 'ns1', spec: s }, [{ name: 'lin-0', os: 'linux', podIPs: ['10.1.0.5', 'fd00::5'] }], opts) as unknown as Job[];
  const c = (lin as Job).spec.template.spec.containers[0] as Job['spec']['template']['spec']['containers'][0];
  // the kubelet's part: fieldRefs resolved
  const fields: Record<string, string> = { 'spec.nodeName': 'lin-0', 'metadata.name': 'cap-x1', 'metadata.namespace': 'ns1' };
  const env = Object.fromEntries(c.env.map((e) => [e.name, e.value ?? fields[(e.valueFrom as { fieldRef: { fieldPath: string } }).fieldRef.fieldPath]]));
  const w = decodeWorkloadEnv(env);
  assert.equal(w.captureName, 'cap');
  assert.equal(w.nodeName, 'lin-0');
  assert.equal(w.podName, 'cap-x1');
  assert.equal(w.podNamespace, 'ns1');
  assert.equal(w.startTimestamp?.toISOString(), '2026-11-23T10:00:00.000Z');
  assert.equal(w.durationMs, 120_000);
  assert.equal(w.maxSizeMb, 50);
  assert.equal(w.fileCount, 3);
  assert.equal(w.packetSize, 96);
  assert.deepEqual(w.interfaces, ['eth0', 'eth1']);
  assert.equal(w.includeMetadata, true);
  assert.equal(w.tcpdumpFilter, '(host 10.1.0.5 or host fd00::5) and ((port 80)) and ((src host 10.0.0.5))');
  assert.equal(w.tcpdumpRawFilter, 'not arp');
  assert.equal(w.pcapFilter, 'udp');
  assert.deepEqual([...w.tcpdumpFlags].sort(), ['--immediate-mode', '-nn', '-p', '-vv'].sort());
  assert.equal(w.hostPath, '/var/log/retina/captures/retina');
  assert.deepEqual(w.s3, { endpoint: undefined, region: 'r', bucket: 'b', path: 'p' });
  assert.equal(env['RETINA_CAPTURE_HOSTPATH_BASE_DIR'], '/var/log/retina/captures');
});
