import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CaptureEnvError, captureBaseName, combinedFilter, decodeWorkloadEnv, parseNetshFilter, type WorkloadEnv } from './env.js';
import { goDuration } from './spec.js';

/** The env for `w` (the inverse of decodeWorkloadEnv; empty values are left out): the round trip's other half. */
function encodeWorkloadEnv(w: WorkloadEnv): Record<string, string> {
  const e: Record<string, string | undefined> = {
    CAPTURE_NAME: w.captureName, NODE_HOST_NAME: w.nodeName, POD_NAME: w.podName, POD_NAMESPACE: w.podNamespace,
    CAPTURE_START_TIMESTAMP: w.startTimestamp?.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    CAPTURE_DURATION: goDuration(w.durationMs), CAPTURE_MAX_SIZE: String(w.maxSizeMb), CAPTURE_FILE_COUNT: String(w.fileCount),
    CAPTURE_PACKET_SIZE: String(w.packetSize), CAPTURE_INTERFACES: w.interfaces.join(','), INCLUDE_METADATA: String(w.includeMetadata),
    TCPDUMP_FILTER: w.tcpdumpFilter, TCPDUMP_RAW_FILTER: w.tcpdumpRawFilter, PCAP_FILTER: w.pcapFilter, TCPDUMP_FLAGS: w.tcpdumpFlags.join(' '),
    NETSH_FILTER: w.netshFilter, HOSTPATH: w.hostPath, PERSISTENT_VOLUME_CLAIM: w.pvcPath,
    S3_ENDPOINT: w.s3?.endpoint, S3_REGION: w.s3?.region, S3_BUCKET: w.s3?.bucket, S3_PATH: w.s3?.path, APISERVER: w.apiserver,
  };
  return Object.fromEntries(Object.entries(e).filter((kv): kv is [string, string] => kv[1] !== undefined && kv[1] !== ''));
}

const full = {
  CAPTURE_NAME: 'cap', NODE_HOST_NAME: 'aks-node-1', POD_NAME: 'cap-x1', POD_NAMESPACE: 'default', CAPTURE_START_TIMESTAMP: '2026-01-02T03:04:05Z',
  CAPTURE_DURATION: '1m30s', CAPTURE_MAX_SIZE: '50', CAPTURE_FILE_COUNT: '3', CAPTURE_PACKET_SIZE: '96', CAPTURE_INTERFACES: 'eth0,eth1',
  INCLUDE_METADATA: 'false', TCPDUMP_FILTER: 'host 10.0.0.1 or host 10.0.0.2', TCPDUMP_RAW_FILTER: 'tcp', PCAP_FILTER: 'port 80',
  TCPDUMP_FLAGS: '-p -nn --immediate-mode', NETSH_FILTER: 'IPv4.Address=(10.0.0.1,10.0.0.2) IPv6.Address=(fd00::1)', HOSTPATH: '/var/log/retina/captures/x',
  PERSISTENT_VOLUME_CLAIM: '/mnt/azure', S3_ENDPOINT: 'http://minio:9000', S3_REGION: 'eu-west-1', S3_BUCKET: 'b', S3_PATH: 'retina/captures', APISERVER: 'https://k:443',
};

describe('capture env contract', () => {
  it('decodes every variable and encodes back to the same env', () => {
    const w = decodeWorkloadEnv(full);
    assert.equal(w.durationMs, 90_000);
    assert.deepEqual(w.interfaces, ['eth0', 'eth1']);
    assert.deepEqual(w.tcpdumpFlags, ['-p', '-nn', '--immediate-mode']);
    assert.equal(w.includeMetadata, false);
    assert.deepEqual(w.s3, { endpoint: 'http://minio:9000', region: 'eu-west-1', bucket: 'b', path: 'retina/captures' });
    assert.deepEqual(encodeWorkloadEnv(w), full);
  });

  it('defaults as Retina: 1 minute, 100 MB, no rotation, metadata on, every interface', () => {
    const w = decodeWorkloadEnv({ CAPTURE_NAME: 'c', NODE_HOST_NAME: 'n' });
    assert.deepEqual([w.durationMs, w.maxSizeMb, w.fileCount, w.packetSize, w.includeMetadata, w.interfaces, w.s3], [60_000, 100, 0, 0, true, [], undefined]);
  });

  it('reports every bad variable at once, each by name', () => {
    try {
      decodeWorkloadEnv({
        NODE_HOST_NAME: 'n', CAPTURE_DURATION: '5 minutes', CAPTURE_MAX_SIZE: '-1', CAPTURE_FILE_COUNT: 'x', INCLUDE_METADATA: 'yes',
        TCPDUMP_FLAGS: '-w /tmp/x', TCPDUMP_FILTER: 'port 80 -Z root', NETSH_FILTER: 'IPv4.Address=(1.2.3)', CAPTURE_START_TIMESTAMP: 'yesterday',
        HOSTPATH: 'relative/dir', S3_PATH: 'p', CAPTURE_INTERFACES: '-i',
      });
      assert.fail('no error');
    } catch (e) {
      assert.ok(e instanceof CaptureEnvError);
      const text = e.problems.join('\n');
      for (const k of ['CAPTURE_NAME is required', 'CAPTURE_DURATION=', 'CAPTURE_MAX_SIZE=', 'CAPTURE_FILE_COUNT=', 'INCLUDE_METADATA=', 'TCPDUMP_FLAGS: "-w"', 'TCPDUMP_FILTER=',
        'NETSH_FILTER: "1.2.3" is not an IPv4 address', 'CAPTURE_START_TIMESTAMP=', 'HOSTPATH="relative/dir" is not an absolute path', 'S3_BUCKET is required', 'CAPTURE_INTERFACES: "-i"']) {
        assert.ok(text.includes(k), `missing ${k} in:\n${text}`);
      }
    }
  });

  it('combines the filters, names files as Retina, prints Go durations', () => {
    assert.equal(combinedFilter({ tcpdumpFilter: 'host 1.2.3.4', tcpdumpRawFilter: '', pcapFilter: 'tcp or udp' }), '(host 1.2.3.4) and (tcp or udp)');
    assert.equal(combinedFilter({ tcpdumpFilter: '', tcpdumpRawFilter: '', pcapFilter: 'tcp' }), 'tcp');
    assert.equal(captureBaseName('cap', 'node', new Date('2026-01-02T03:04:05.678Z')), 'cap-node-20260102030405UTC');
    assert.deepEqual([goDuration(30_000), goDuration(60_000), goDuration(3_723_000), goDuration(1500)], ['30s', '1m0s', '1h2m3s', '1.5s']);
    assert.deepEqual(parseNetshFilter('IPv4.Address=(10.0.0.1, 10.0.0.2)IPv6.Address=(fd00::1)'), ['10.0.0.1', '10.0.0.2', 'fd00::1']);
    assert.deepEqual(parseNetshFilter(''), []);
  });
});
