/** docs/kernels.md's generated table says what bench/kernels/matrix.json (the kernel matrix's last run) holds. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { DOCS_FILE, MATRIX_FILE, readMatrix, renderDocs } from './matrix-file.js';

test('docs/kernels.md\'s kernel matrix is the one bench/kernels/matrix.json holds', () => {
  const columns = readMatrix();
  assert.ok(columns.length >= 4, `${MATRIX_FILE} holds the host and the pinned kernels`);
  const doc = readFileSync(DOCS_FILE, 'utf8');
  assert.equal(doc, renderDocs(doc, columns), 'stale: RETINA_KERNEL_MATRIX_UPDATE=1 make kernels writes both');
});
