import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import { nodeFiles } from './node-files.js';
import { DownloadError } from './transfer.js';

const pod = (name: string, node: string | undefined, phase: string, annotations: Record<string, string> = {}, terminated?: string): V1Pod => ({
  metadata: { name, annotations },
  spec: { containers: [], ...(node ? { nodeName: node } : {}) },
  status: { phase, ...(terminated ? { containerStatuses: [{ name: 'c', image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 1, message: terminated } } }] } : {}) },
});
const cap = { namespace: 'ns', name: 'cap' };

test('each finished pod gives its node, host directory and tarball (Retina\'s base name gets .tar.gz); the others are warned about and skipped', () => {
  const warned: string[] = [];
  const files = nodeFiles(cap, [
    pod('p1', 'n1', 'Succeeded', { 'retina-capture-hostpath': '/var/log/retina/captures/cap', 'retina-capture-filename': 'cap-n1-20260101000000UTC' }),
    pod('p2', 'n2', 'Succeeded', { 'retina-capture-hostpath': 'C:\\captures' }),
    pod('p3', 'n3', 'Succeeded', { 'retina-capture-hostpath': '/x', 'retina-capture-filename': '../etc/passwd' }),
    pod('p4', undefined, 'Pending'),
    pod('p5', 'n5', 'Running'),
    pod('p6', 'n6', 'Failed', {}, 'tcpdump: no such device'),
    pod('p7', 'n7', 'Succeeded'),
    pod('p8', 'n8', 'Succeeded', { 'retina-capture-hostpath': '/a/../b' }),
  ], (s) => warned.push(s));
  assert.deepEqual(files, [
    { capture: cap, pod: 'p1', node: 'n1', hostPath: '/var/log/retina/captures/cap', tarball: 'cap-n1-20260101000000UTC.tar.gz' },
    { capture: cap, pod: 'p2', node: 'n2', hostPath: 'C:\\captures' },
    { capture: cap, pod: 'p3', node: 'n3', hostPath: '/x' },
  ]);
  assert.deepEqual(warned, [
    'capture cap: pod p3: annotation retina-capture-filename: "../etc/passwd" is not a file name; listing the host directory instead',
    'capture cap: pod p4 is not scheduled to a node yet (Pending); skipped',
    'capture cap: pod p5 on node n5 is Running (the capture has not finished); skipped',
    'capture cap: pod p6 on node n6 failed: tcpdump: no such device; skipped',
    'capture cap: pod p7 has no retina-capture-hostpath annotation (no hostPath output; use --blob-url or --s3-bucket); skipped',
    'capture cap: pod p8: annotation retina-capture-hostpath "/a/../b" is not an absolute path; skipped',
  ]);
});

test('a capture without pods is an error naming the label', () => {
  assert.throws(() => nodeFiles(cap, [], () => undefined), (e: unknown) => e instanceof DownloadError && /no pods found with label capture-name=cap/.test(e.message));
});
