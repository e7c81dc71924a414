/**
 * The kernel matrix (issue 36): the suite of every Linux plugin (suite.ts) inside each kernel of
 * hack/kernels/versions (Debian's 5.10, 6.1, 6.12), booted under qemu (TCG) with this checkout
 * (hack/kernels/boot.sh); this machine's own column is host.test.ts's. A failure names the kernel and
 * carries the suite's failed checks (the plugin, the program, the verifier's words). What each kernel
 * showed is compared with bench/kernels/matrix.json (hooks, programs, reasons mode, verifier
 * instructions and states): a change of any is a failure until `RETINA_KERNEL_MATRIX_UPDATE=1 make
 * kernels` writes the new figures, from which docs/kernels.md's table is generated
 * (test/kernels/docs.test.ts keeps the two in step). The guests share nothing of the host's but its
 * cores: `make test` runs this file in a lane of its own, beside the others (hack/test/lanes.mjs).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ROOT, nodeBinary } from '../e2e/agent-process.js';
import { guestTimes, verifierTable, type Column } from './report.js';
import { writeColumns } from './matrix-file.js';
import { GUEST_ENV, SUITE, UPDATE, check, compareWithFile, pins, run } from './column.js';

const seen: Column[] = [];

for (const pin of pins) {
  test(`kernel ${pin.name} (${pin.version}) under qemu`, { timeout: 1_800_000 }, async (t) => {
    assert.ok(existsSync(join(pin.dir, '.complete')), `kernel ${pin.name} is not fetched into ${pin.dir}: make kernels (hack/kernels/fetch.sh) fetches it`);
    const out = mkdtempSync(join(tmpdir(), `rtk-${pin.name}-`));
    try {
      const node = nodeBinary();
      writeFileSync(
        join(out, 'run.sh'),
        [
          `cd '${ROOT}'`,
          `export PATH='${node.includes('/') ? join(node, '..') : '/usr/bin'}':$PATH RETINA_KERNEL_REPORT=/mnt/out/report.json ${GUEST_ENV}`,
          `exec '${node}' --test --test-concurrency=1 --test-reporter=spec --test-timeout=1500000 '${SUITE}'`,
          '',
        ].join('\n'),
      );
      const t0 = Date.now();
      // node's 120 MB read into the guest's memory at boot, not page by page over 9p (37 s on 5.10).
      const preload = node.includes('/') ? { GUEST_PRELOAD: realpathSync(node) } : {};
      const boot = await run(join(ROOT, 'hack/kernels/boot.sh'), [pin.dir, out, '1700'], { ...process.env, ...preload });
      const log = existsSync(join(out, 'run.log')) ? readFileSync(join(out, 'run.log'), 'utf8') : '';
      const report = check(pin.name, boot.code, `${log}\n${boot.out}`, join(out, 'report.json'));
      seen.push({ name: pin.name, report });
      t.diagnostic(`${pin.name} ${report.release}: ${Math.round((Date.now() - t0) / 1000)} s under qemu; ${JSON.stringify(report.counts)}`);
      for (const line of guestTimes(pin.name, log)) t.diagnostic(line);
      compareWithFile(pin.name, report);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
}

test('the verifier budget per program per kernel, and the files written when asked', (t) => {
  assert.equal(seen.length, pins.length, 'every pinned kernel reported');
  t.diagnostic(`\n${verifierTable(seen)}`);
  for (const c of seen) {
    for (const p of c.report.programs) if (p.accepted) t.diagnostic(`${c.name} ${p.program}: ${p.insns} insns, ${p.totalStates} states, load ${p.loadMs} ms${p.verificationUs ? `, verification ${p.verificationUs} us` : ''}`);
  }
  if (UPDATE) writeColumns(seen, pins.map((p) => p.name));
});
