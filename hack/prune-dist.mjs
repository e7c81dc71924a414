// Deletes compiled output whose TypeScript source is gone: dist/<dir>/**/x.js (and its .js.map)
// without <dir>/**/x.ts. tsc never deletes what it emitted, so without this a deleted or renamed
// test keeps running from dist/ under `make test`. Runs before every tsc (Makefile, build.ps1); it
// only reads directory listings, so incremental builds stay fast.
//   node hack/prune-dist.mjs [root]     prints what it removed
import { existsSync, readdirSync, rmSync, rmdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = process.argv[2] ?? process.cwd();
const dist = join(root, 'dist');

/** Walks dist/<dir>, removing orphans; returns whether the folder ended up empty. */
function prune(dir) {
  let left = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) {
      if (prune(path)) rmdirSync(path);
      else left++;
      continue;
    }
    const js = e.name.endsWith('.js.map') ? path.slice(0, -4) : e.name.endsWith('.js') ? path : undefined;
    if (js && !existsSync(join(root, relative(dist, js)).replace(/\.js$/, '.ts'))) {
      rmSync(path);
      process.stdout.write(`removed stale ${relative(root, path)}\n`);
    } else left++;
  }
  return left === 0;
}

if (existsSync(dist)) {
  for (const e of readdirSync(dist, { withFileTypes: true })) if (e.isDirectory()) prune(join(dist, e.name));
}
