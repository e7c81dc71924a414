import assert from 'node:assert/strict';
import { test } from 'node:test';
import { validateCaptureSpec } from '../../capture/index.js';
import { parseFlags, UsageError } from '../args.js';
import { CREATE_FLAGS, specFromFlags, withTriggerFlag } from './create.js';

const parse = (...argv: string[]): ReturnType<typeof specFromFlags> => specFromFlags(parseFlags(argv, CREATE_FLAGS), 'cap');

test("Retina's defaults: Linux nodes, 1m, 100 MB, host path retina, metadata on", () => {
  const { spec, secrets } = parse();
  assert.deepEqual(spec.captureConfiguration.captureTarget, { nodeSelector: { matchLabels: { 'kubernetes.io/os': 'linux' } } });
  assert.deepEqual(spec.captureConfiguration.captureOption, { duration: '1m', maxCaptureSize: 100, packetSize: 0 });
  assert.equal(spec.captureConfiguration.includeMetadata, true);
  assert.deepEqual(spec.outputConfiguration, { hostPath: 'retina' });
  assert.equal(spec.cleanUpAfterUpload, false);
  assert.deepEqual(secrets, {});
  assert.deepEqual(validateCaptureSpec(spec), []);
});

test('pod targets clear the default node selector; booleans take =false; secrets become named Secrets', () => {
  const { spec, secrets } = parse('--pod-selectors', 'app=web', '--namespace-selectors=team=a', '--include-metadata=false', '--no-resolve-port',
    '--include-filter', '10.0.0.1:80,*:53', '--blob-upload', 'https://a/c?sig=x', '--s3-bucket', 'b', '--s3-access-key-id', 'id', '--s3-secret-access-key', 'k', '--file-count', '3');
  assert.deepEqual(spec.captureConfiguration.captureTarget, { podSelector: { matchLabels: { app: 'web' } }, namespaceSelector: { matchLabels: { team: 'a' } } });
  assert.equal(spec.captureConfiguration.includeMetadata, false);
  assert.equal(spec.captureConfiguration.captureOption?.noResolvePort, true);
  assert.equal(spec.captureConfiguration.captureOption?.fileCount, 3);
  assert.deepEqual(spec.captureConfiguration.filters, { include: ['10.0.0.1:80', '*:53'] });
  assert.equal(spec.outputConfiguration.blobUpload, 'cap-blob-upload-secret');
  assert.deepEqual(spec.outputConfiguration.s3Upload, { bucket: 'b', path: 'retina/captures', secretName: 'cap-s3-upload-secret' });
  assert.deepEqual(secrets, { blobUploadUrl: 'https://a/c?sig=x', s3AccessKeyId: 'id', s3SecretAccessKey: 'k' });
  assert.deepEqual(parse('--node-names', 'n1,n2').spec.captureConfiguration.captureTarget, { nodeSelector: { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1', 'n2'] }] } });
  assert.deepEqual(parse('--pod-names', 'ns/p').spec.captureConfiguration.captureTarget, { podNames: ['ns/p'] });
});

test('bad flags are named', () => {
  assert.throws(() => parse('--max-size', 'big'), (e: unknown) => e instanceof UsageError && /--max-size: "big"/.test(e.message));
  assert.throws(() => parse('--no-wait=maybe'), /--no-wait: "maybe" is not true or false/);
  assert.throws(() => parse('--bogus'), /unknown flag --bogus/);
  assert.throws(() => parse('--node-selectors', 'nokey'), /--node-selectors: "nokey" is not key=value/);
});

test('trigger flags make spec.captureConfiguration.trigger; each bad one is named with its field and its flag', () => {
  const { spec } = parse('--trigger-drop-reason', 'NETFILTER_DROP', '--trigger-pod', 'rn-b/srv', '--pre-trigger-packets', '20', '--post-trigger-duration', '3s',
    '--trigger-protocol', 'UDP', '--trigger-destination-port', '9999');
  assert.deepEqual(spec.captureConfiguration.trigger, {
    dropReason: 'NETFILTER_DROP', pod: 'rn-b/srv', preTrigger: { packets: 20 }, postTriggerDuration: '3s', flowFilter: { protocol: 'UDP', destinationPort: 9999 },
  });
  assert.deepEqual(validateCaptureSpec(spec), []);
  assert.equal(parse().spec.captureConfiguration.trigger, undefined, 'no trigger flag, no trigger');
  const bad = validateCaptureSpec(parse('--trigger-pod', 'srv', '--pre-trigger-packets', 'many', '--pre-trigger-duration', '2s', '--trigger-destination-port', '0').spec).map(withTriggerFlag);
  assert.ok(bad.includes('spec.captureConfiguration.trigger.pod: "srv" is not namespace/name (--trigger-pod)'), bad.join('\n'));
  assert.ok(bad.includes('spec.captureConfiguration.trigger.preTrigger.packets: "many"; an integer from 0 to 1000000 (--pre-trigger-packets)'), bad.join('\n'));
  assert.ok(bad.includes('spec.captureConfiguration.trigger.flowFilter.destinationPort: 0 is not a port (1-65535) (--trigger-destination-port)'), bad.join('\n'));
  assert.ok(bad.includes('spec.captureConfiguration.trigger.preTrigger: set packets or duration, not both'), bad.join('\n'));
});
