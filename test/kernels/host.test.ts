/**
 * The kernel matrix's column of this machine's kernel (issue 36): the suite of every Linux plugin
 * (suite.ts) run here, compared with bench/kernels/matrix.json's "host" column when the release is the
 * same. A file of its own, apart from the pinned kernels' (matrix.test.ts), because it sends traffic
 * through the host's own kernel: `make test` runs it in its local lane, the qemu guests in a lane of
 * their own beside it (hack/test/lanes.mjs).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeBinary } from '../e2e/agent-process.js';
import { verifierTable } from './report.js';
import { writeColumns } from './matrix-file.js';
import { SUITE, UPDATE, check, compareWithFile, pins, run } from './column.js';
import { holdDropsForThisFile } from '../ebpf/drop-lock.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

test('this machine\'s kernel', { timeout: 900_000 }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'rtk-host-'));
  try {
    const reportFile = join(dir, 'report.json');
    // NODE_TEST_CONTEXT would make the child a subtest reporter of this runner rather than a runner of its own.
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const r = await run(nodeBinary(), ['--test', '--test-concurrency=1', '--test-reporter=spec', '--test-timeout=600000', SUITE], { ...env, RETINA_KERNEL_REPORT: reportFile });
    const report = check('host', r.code, r.out, reportFile);
    t.diagnostic(`\n${verifierTable([{ name: 'host', report }])}`);
    if (UPDATE) writeColumns([{ name: 'host', report }], pins.map((p) => p.name));
    t.diagnostic(`host ${report.release}: ${JSON.stringify(report.counts)}`);
    compareWithFile('host', report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
