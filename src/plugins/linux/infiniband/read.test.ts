/** readInfiniband over the recorded-looking tree in test/fixtures/infiniband/sys (real files). */
import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { failureCause } from './decode.js';
import { readInfiniband } from './read.js';

// dist/src/plugins/linux/infiniband/ → repository root
const FIXTURE = fileURLToPath(new URL('../../../../../test/fixtures/infiniband/sys', import.meta.url));

void describe('readInfiniband on the fixture tree', () => {
  void it('reads every counter of every device and port, following the class symlinks', async () => {
    const snap = await readInfiniband(FIXTURE);
    const keys = snap.counters.map((c) => `${c.device}/${c.port}/${c.name}=${c.value}`);
    // 3 ports x 14 counters, less the garbage one (mlx5_0/2/VL15_dropped) and the unreadable one (mlx5_1/1/port_xmit_wait)
    assert.equal(keys.length, 40);
    assert.ok(keys.includes('mlx5_0/1/port_rcv_data=48779340281'));
    assert.ok(keys.includes('mlx5_0/1/VL15_dropped=0'));
    assert.ok(keys.includes('mlx5_0/2/link_downed=0'));
    assert.ok(keys.includes('mlx5_1/1/symbol_error=5'));
    assert.ok(!keys.some((k) => k.startsWith('mlx5_0/2/VL15_dropped') || k.startsWith('mlx5_1/1/port_xmit_wait')));
  });

  void it('ignores hw_counters and the port attributes that are not counters', async () => {
    const snap = await readInfiniband(FIXTURE);
    const names = new Set(snap.counters.map((c) => c.name));
    for (const n of ['out_of_buffer', 'rnr_nak_retry_err', 'duplicate_request', 'state', 'rate', 'link_layer', 'fw_ver']) assert.ok(!names.has(n), n);
  });

  void it('reads debug status parameters of ib* interfaces only; an ib interface without debug/ is not an error', async () => {
    const snap = await readInfiniband(FIXTURE);
    assert.deepEqual(
      snap.statusParams.map((s) => `${s.iface}/${s.name}=${s.value}`),
      ['ib0/link_down_reason=0', 'ib0/lro_timeout=32'],
    );
  });

  void it('names the garbage file and the unreadable entry, in path order', async () => {
    const snap = await readInfiniband(FIXTURE);
    assert.deepEqual(
      snap.failed.map((f) => [f.what.slice(FIXTURE.length), failureCause(f.error)]),
      [
        ['/class/infiniband/mlx5_0/ports/2/counters/VL15_dropped', 'not an unsigned integer: "N/A"'],
        ['/class/infiniband/mlx5_1/ports/1/counters/port_xmit_wait', 'ENOENT'],
      ],
    );
  });
});

void describe('readInfiniband on altered copies', () => {
  let tmp: string;
  before(async () => {
    tmp = await mkdtemp(join(tmpdir(), 'retina-ib-read-'));
  });
  after(async () => {
    await rm(tmp, { recursive: true, force: true });
  });

  void it('reports missing class directories as failures, with nothing read', async () => {
    const root = join(tmp, 'empty');
    await mkdir(root);
    const snap = await readInfiniband(root);
    assert.deepEqual(snap.counters, []);
    assert.deepEqual(snap.statusParams, []);
    assert.deepEqual(
      snap.failed.map((f) => [f.what.slice(root.length), failureCause(f.error)]),
      [
        ['/class/infiniband', 'ENOENT'],
        ['/class/net', 'ENOENT'],
      ],
    );
  });

  void it('records a directory where a value file is expected, and keeps the rest', async () => {
    const root = join(tmp, 'eisdir');
    await cp(FIXTURE, root, { recursive: true, verbatimSymlinks: true });
    await mkdir(join(root, 'class/net/ib0/debug/nested'));
    await writeFile(join(root, 'class/net/ib0/debug/nested/x'), '1\n');
    const snap = await readInfiniband(root);
    assert.deepEqual(snap.statusParams.map((s) => s.name), ['link_down_reason', 'lro_timeout']);
    assert.ok(snap.failed.some((f) => f.what === join(root, 'class/net/ib0/debug/nested') && failureCause(f.error) === 'EISDIR'));
  });
});
