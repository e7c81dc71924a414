/**
 * `make test` runs dist/**\/*.test.js, so dist/ must hold only what today's sources compile to: a
 * deleted or renamed test would otherwise keep running from its old output (tsc never deletes).
 * The build prunes such files (hack/prune-dist.mjs); this checks the dist/ the suite runs from, and
 * the pruning itself on a scratch tree.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Compiled .js files under root/dist whose .ts source is missing, as paths relative to dist. */
function orphans(root: string): string[] {
  const dist = join(root, 'dist');
  return readdirSync(dist, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.js') && !existsSync(join(root, f.replace(/\.js$/, '.ts'))));
}

test('every compiled file in dist/ still has its TypeScript source', () => {
  const found = orphans(ROOT);
  assert.ok(found.length < readdirSync(join(ROOT, 'dist'), { recursive: true }).length, 'dist/ was walked');
  assert.deepEqual(found, [], 'stale output in dist/ (make build prunes it: hack/prune-dist.mjs)');
});

test('the build step removes output whose source is gone and keeps the rest', () => {
  const root = mkdtempSync(join(tmpdir(), 'retina-prune-'));
  try {
    const put = (rel: string): void => {
      mkdirSync(dirname(join(root, rel)), { recursive: true });
      writeFileSync(join(root, rel), '');
    };
    for (const f of ['src/a/kept.ts', 'dist/src/a/kept.js', 'dist/src/a/kept.js.map', 'dist/test/gone/old.test.js',
      'dist/test/gone/old.test.js.map', 'dist/src/a/renamed.js', 'dist/.tsbuildinfo']) put(f);
    assert.deepEqual(orphans(root).sort(), ['src/a/renamed.js', 'test/gone/old.test.js']);
    execFileSync(process.execPath, [join(ROOT, 'hack/prune-dist.mjs'), root], { stdio: 'pipe' });
    assert.deepEqual(orphans(root), []);
    assert.ok(existsSync(join(root, 'dist/src/a/kept.js')) && existsSync(join(root, 'dist/src/a/kept.js.map')));
    assert.ok(!existsSync(join(root, 'dist/test/gone')), 'an emptied folder goes too');
    assert.ok(existsSync(join(root, 'dist/.tsbuildinfo')));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
