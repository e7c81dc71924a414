// The Linux agent's start-up snapshot (src/cli/agent-snapshot.ts), for hack/bundle.mjs and the image:
//   buildAgentSnapshot(root, out)  out/retina-agent.cjs (the snapshot's one script) and out/vendor/
//   makeAgentSnapshot(node, dir)   dir/retina-agent.blob, made and checked with that node
//   node hack/snapshot.mjs make <node> <dir>   the latter from a shell (hack/image/linux.sh: the image's node)
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, resolve } from 'node:path';

const repo = join(dirname(new URL(import.meta.url).pathname), '..');

/**
 * The packages whose code is in the agent's start-up snapshot: what runs before its first /metrics
 * answer (config, logger, registry). Every other package the agent's sources import (the Kubernetes
 * client, grpc-js, proto-loader, re2js, systeminformation, ...) is left out of it, bundled on its own
 * into vendor/<package>.cjs and required on first use, as the ES bundle loads its chunks: a snapshot
 * holding their source (client-node alone is 5.3 MB) took 14 MB more RSS and more CPU to start
 * (bench/agent/README.md). Each is a leaf: it imports none of our modules, so nothing is loaded twice.
 */
const SNAPSHOT_PACKAGES = new Set(['yaml', 'prom-client', 'winston', 'koffi']);
const packageName = (spec) => spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/');
const vendorFile = (spec) => `${spec.replace(/^@/, '').replace(/\//g, '-')}.cjs`;

/**
 * retina-agent.cjs (src/cli/agent-snapshot.ts, CommonJS: a snapshot's entry is one script) and
 * vendor/. `import.meta.url` reads a global the entry sets again after deserialisation (the files
 * beside the blob, wherever it is), so koffi's native module, the eBPF objects and vendor/ are found.
 */
export async function buildAgentSnapshot(root, out) {
  const vendor = new Map();
  const src = join(root, 'src') + '/';
  // One CommonJS file per entry; `import.meta.url` is `url`, set by the file's first line.
  const cjs = (url) => ({
    absWorkingDir: root, outExtension: { '.js': '.cjs' }, bundle: true, format: 'cjs', platform: 'node', target: 'node22',
    external: ['*.node'], banner: { js: `${url} = require('node:url').pathToFileURL(__filename).href;` },
    define: { 'import.meta.url': url.replace(/^var /, '') }, legalComments: 'none', minifyWhitespace: true, minifySyntax: true, logLevel: 'warning',
  });
  await build({
    ...cjs('globalThis.__retinaBundleUrl'),
    entryPoints: [{ in: 'src/cli/agent-snapshot.ts', out: 'retina-agent' }],
    outdir: out,
    plugins: [{
      name: 'vendor',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, async (a) => {
          if (a.pluginData === 'vendor' || !a.importer.startsWith(src) || a.path.startsWith('node:') || builtinModules.includes(a.path)) return undefined;
          if (SNAPSHOT_PACKAGES.has(packageName(a.path))) return undefined;
          const r = await b.resolve(a.path, { kind: a.kind, resolveDir: a.resolveDir, importer: a.importer, pluginData: 'vendor' });
          if (r.errors.length > 0) return { errors: r.errors };
          vendor.set(a.path, r.path);
          return { path: a.path, namespace: 'vendor' };
        });
        b.onLoad({ filter: /.*/, namespace: 'vendor' }, (a) => ({
          loader: 'js',
          contents: `module.exports = process.getBuiltinModule('node:module').createRequire(globalThis.__retinaBundleUrl)(${JSON.stringify(`./vendor/${vendorFile(a.path)}`)});`,
        }));
      },
    }],
  });
  await build({
    ...cjs('var __vendorUrl'),
    entryPoints: [...vendor].map(([spec, path]) => ({ in: path, out: vendorFile(spec).replace(/\.cjs$/, '') })),
    outdir: join(out, 'vendor'),
  });
}

/** The node flags the agent runs with (bin/retina-agent's exec line, as hack/image/common.sh reads them). */
export function agentNodeFlags() {
  const m = /^exec "\$n" (.*?) "\$d\/dist\//m.exec(readFileSync(join(repo, 'bin', 'retina-agent'), 'utf8'));
  if (!m?.[1]) throw new Error('bin/retina-agent has no `exec "$n" <flags> "$d/dist/...` line');
  return m[1].split(/\s+/);
}

/**
 * `node --build-snapshot` of <dir>/retina-agent.cjs into <dir>/retina-agent.blob with `node` (the one
 * that will run it: a blob from another Node build makes node exit 14), then the blob run once
 * (`--version`) to prove it loads. Node warns on stderr about built-ins it has not verified in
 * snapshots (the agent's are not used before deserialisation): shown only when the build fails.
 */
export function makeAgentSnapshot(node, at) {
  const dir = resolve(at);
  const exe = node.includes('/') ? resolve(node) : node;
  const blob = join(dir, 'retina-agent.blob');
  const run = (args) => execFileSync(exe, [...agentNodeFlags(), '--snapshot-blob', blob, ...args], { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    run(['--build-snapshot', join(dir, 'retina-agent.cjs')]);
    const v = run(['--', '--version']).trim();
    const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    if (!v.includes(version)) throw new Error(`the snapshot's --version printed ${JSON.stringify(v)}, not ${version}`);
  } catch (e) {
    throw new Error(`cannot make the agent's start-up snapshot ${blob}: ${e.message}\n${e.stderr ?? ''}`);
  }
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const [cmd, node, dir] = process.argv.slice(2);
  if (cmd !== 'make' || !node || !dir) {
    process.stderr.write('usage: node hack/snapshot.mjs make <node> <bundle dir>\n');
    process.exit(2);
  }
  makeAgentSnapshot(node, dir);
}
