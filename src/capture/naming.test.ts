import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { allCapturesBundleName, captureBaseName, captureTarballName, isNodeTarball, parseTarballName, tarballFromAnnotation } from './naming.js';

describe('capture naming (Retina pkg/capture/file)', () => {
  const at = new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678));
  it('formats <capture>-<node>-<YYYYMMDDhhmmss>UTC in UTC', () => {
    assert.equal(captureBaseName('cap', 'aks-nodepool1-0', at), 'cap-aks-nodepool1-0-20260102030405UTC');
    assert.equal(captureTarballName('cap', 'n', at), 'cap-n-20260102030405UTC.tar.gz');
    assert.equal(allCapturesBundleName(at), 'all-captures-20260102030405.tar.gz');
  });
  it('parses names back for a known capture, dashes in both names included', () => {
    const p = parseTarballName('my-cap-aks-node-1-20261231235959UTC.tar.gz', 'my-cap');
    assert.equal(p?.node, 'aks-node-1');
    assert.equal(p?.at.toISOString(), '2026-12-31T23:59:59.000Z');
    assert.equal(parseTarballName('my-cap-aks-node-1-20261231235959UTC.tar.gz', 'other'), undefined);
    assert.equal(parseTarballName('my-cap-n-20261332000000UTC.tar.gz', 'my-cap'), undefined, 'month 13');
    assert.equal(parseTarballName('my-cap--20261231235959UTC.tar.gz', 'my-cap'), undefined, 'no node');
    assert.ok(isNodeTarball('cap-n1-20260102030405UTC.tar.gz', 'cap', 'n1'));
    assert.ok(!isNodeTarball('cap-n1-20260102030405UTC.tar.gz', 'cap', 'n'));
  });
  it('accepts both annotation styles and refuses paths', () => {
    assert.equal(tarballFromAnnotation('cap-n-20260102030405UTC'), 'cap-n-20260102030405UTC.tar.gz');
    assert.equal(tarballFromAnnotation('cap-n-20260102030405UTC.tar.gz'), 'cap-n-20260102030405UTC.tar.gz');
    assert.throws(() => tarballFromAnnotation('../etc/passwd'), /retina-capture-filename: .* is not a file name/);
    assert.throws(() => tarballFromAnnotation(''), /not a file name/);
  });
});
