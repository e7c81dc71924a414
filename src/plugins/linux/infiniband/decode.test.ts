import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  SysfsValueError,
  counterRows,
  describeFailures,
  failureCause,
  isInfinibandInterface,
  parseSysfsUint,
  statusRows,
} from './decode.js';

void describe('parseSysfsUint', () => {
  void it('reads decimal values with the trailing newline sysfs writes', () => {
    assert.equal(parseSysfsUint('0\n'), 0);
    assert.equal(parseSysfsUint('48779340281\n'), 48_779_340_281);
    assert.equal(parseSysfsUint('  7 '), 7);
  });

  void it('keeps 64-bit counters as the nearest double, as a float64 gauge does', () => {
    assert.equal(parseSysfsUint('18446744073709551615\n'), 2 ** 64);
  });

  for (const bad of ['', '\n', 'N/A\n', '-1', '0x1f', '1.5', '12 34', '4: ACTIVE']) {
    void it(`rejects ${JSON.stringify(bad)}`, () => {
      assert.throws(() => parseSysfsUint(bad), SysfsValueError);
    });
  }

  void it('quotes the content, shortened, in the error', () => {
    assert.throws(() => parseSysfsUint('N/A\n'), { message: 'not an unsigned integer: "N/A"' });
    assert.throws(() => parseSysfsUint('x'.repeat(100)), { message: `not an unsigned integer: "${'x'.repeat(32)}…"` });
  });
});

void describe('isInfinibandInterface', () => {
  void it('takes ib* names (IPoIB, also predictable names such as ibp65s0) and nothing else', () => {
    assert.deepEqual(['ib0', 'ib1', 'ibp65s0', 'eth0', 'lo', 'docker0', 'mlx5_ib0', 'vib0'].filter(isInfinibandInterface), ['ib0', 'ib1', 'ibp65s0']);
  });
});

void describe('rows', () => {
  void it('labels counters with statistic_name, device, port, sorted', () => {
    const rows = counterRows([
      { device: 'mlx5_1', port: '1', name: 'symbol_error', value: 5 },
      { device: 'mlx5_0', port: '2', name: 'link_downed', value: 0 },
      { device: 'mlx5_0', port: '1', name: 'port_xmit_wait', value: 9 },
      { device: 'mlx5_0', port: '1', name: 'VL15_dropped', value: 1 },
    ]);
    assert.deepEqual(rows, [
      [{ statistic_name: 'VL15_dropped', device: 'mlx5_0', port: '1' }, 1],
      [{ statistic_name: 'port_xmit_wait', device: 'mlx5_0', port: '1' }, 9],
      [{ statistic_name: 'link_downed', device: 'mlx5_0', port: '2' }, 0],
      [{ statistic_name: 'symbol_error', device: 'mlx5_1', port: '1' }, 5],
    ]);
  });

  void it('labels status parameters with statistic_name, interface_name, sorted', () => {
    assert.deepEqual(
      statusRows([
        { iface: 'ib1', name: 'lro_timeout', value: 32 },
        { iface: 'ib0', name: 'lro_timeout', value: 16 },
        { iface: 'ib0', name: 'link_down_reason', value: 0 },
      ]),
      [
        [{ statistic_name: 'link_down_reason', interface_name: 'ib0' }, 0],
        [{ statistic_name: 'lro_timeout', interface_name: 'ib0' }, 16],
        [{ statistic_name: 'lro_timeout', interface_name: 'ib1' }, 32],
      ],
    );
  });
});

void describe('describeFailures', () => {
  const enoent = Object.assign(new Error("ENOENT: no such file or directory, open '/x'"), { code: 'ENOENT' });

  void it('gives the errno code of fs errors and the message of others', () => {
    assert.equal(failureCause(enoent), 'ENOENT');
    assert.equal(failureCause(new SysfsValueError('not an unsigned integer: "N/A"')), 'not an unsigned integer: "N/A"');
    assert.equal(failureCause('plain'), 'plain');
  });

  void it('names each failed path in path order', () => {
    assert.equal(
      describeFailures([
        { what: '/sys/class/net/ib0/debug/b', error: enoent },
        { what: '/sys/class/infiniband/mlx5_0/ports/2/counters/VL15_dropped', error: new SysfsValueError('not an unsigned integer: "N/A"') },
      ]),
      'could not read 2 InfiniBand sysfs entries: /sys/class/infiniband/mlx5_0/ports/2/counters/VL15_dropped (not an unsigned integer: "N/A"), /sys/class/net/ib0/debug/b (ENOENT)',
    );
    assert.equal(describeFailures([{ what: '/a', error: enoent }]), 'could not read 1 InfiniBand sysfs entry: /a (ENOENT)');
  });

  void it('names at most `max` paths and counts the rest', () => {
    const failed = ['/e', '/d', '/c', '/b', '/a'].map((what) => ({ what, error: enoent }));
    assert.equal(describeFailures(failed, 2), 'could not read 5 InfiniBand sysfs entries: /a (ENOENT), /b (ENOENT), and 3 more');
  });
});
