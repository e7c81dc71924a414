// The kubectl plugin as single executables (Node's single executable applications), one per target,
// and the krew manifest that installs them (make kubectl-plugin):
//   build/kubectl-plugin/kubectl-retina.cjs               the plugin bundled into one CommonJS file
//                                                         (a SEA's main script is CommonJS; nothing split,
//                                                         nothing loaded from disk)
//   build/kubectl-plugin/sea-prep.blob                    node --experimental-sea-config's blob
//   build/kubectl-plugin/<os>-<arch>/kubectl-retina[.exe] the target's pinned Node binary with the blob
//                                                         injected (postject), runnable with no Node and no checkout
//   build/kubectl-plugin/kubectl-retina_<os>_<arch>.tar.gz krew's archive: kubectl-retina[.exe] and LICENSE
//   build/kubectl-plugin/retina.yaml                      krew's manifest: the archives' URIs and sha256
//   node hack/kubectl-plugin.mjs --node NODE --postject POSTJECT --target linux-amd64=PATH ... [--url-base URL]
// NODE must be the same Node version as every target binary (the blob's format is the version's).
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';

const root = join(dirname(new URL(import.meta.url).pathname), '..');
const { values: opts } = parseArgs({
  options: {
    node: { type: 'string' },
    postject: { type: 'string' },
    target: { type: 'string', multiple: true, default: [] },
    'url-base': { type: 'string' },
    out: { type: 'string', default: join(root, 'build', 'kubectl-plugin') },
  },
});
if (!opts.node || !opts.postject || !opts.target.length) throw new Error('usage: kubectl-plugin.mjs --node NODE --postject POSTJECT --target <os>-<arch>=NODE_BINARY ...');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const out = opts.out;
const urlBase = (opts['url-base'] ?? `https://github.com/retina-ts/retina-ts/releases/download/v${pkg.version}`).replace(/\/+$/, '');
// The sentinel Node's SEA code looks for in its own binary (Node's docs, "Single executable applications").
const FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const main = join(out, 'kubectl-retina.cjs');
await build({
  absWorkingDir: root,
  // The composition root without its top-level await (CommonJS has none).
  stdin: {
    contents: "import { main } from './src/cli/kubectl-retina.ts';\nmain(process.argv.slice(2), process.env).then((code) => { process.exitCode = code; }, (e) => { process.stderr.write(`kubectl-retina: ${e?.stack ?? e}\\n`); process.exitCode = 1; });\n",
    resolveDir: root,
    sourcefile: 'kubectl-retina-sea.ts',
    loader: 'ts',
  },
  outfile: main,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node22',
  minify: true,
  keepNames: true,
  legalComments: 'none',
  logLevel: 'warning',
});

// package.json as an asset: version() reads it with node:sea's getAsset (no file beside the executable).
const seaPackage = join(out, 'package.json');
writeFileSync(seaPackage, JSON.stringify({ name: pkg.name, version: pkg.version }) + '\n');
const blob = join(out, 'sea-prep.blob');
const config = join(out, 'sea-config.json');
writeFileSync(config, JSON.stringify({
  main, output: blob, disableExperimentalSEAWarning: true, useSnapshot: false, useCodeCache: false,
  // the Hubble protos `why` reads the agents' GetFlows with (src/cli/why.ts WHY_PROTO_FILES)
  assets: { 'package.json': seaPackage, ...Object.fromEntries(['observer.proto', 'flow.proto', 'relay.proto'].map((f) => [`proto/hubble/${f}`, join(root, 'proto', 'hubble', f)])) },
}, null, 2) + '\n');
execFileSync(opts.node, ['--experimental-sea-config', config], { stdio: 'inherit' });

const license = join(out, 'LICENSE');
writeFileSync(license, `retina-ts ${pkg.version}: ${pkg.license} license. The executable embeds Node.js ${execFileSync(opts.node, ['--version'], { encoding: 'utf8' }).trim()} (MIT and the licenses of its bundled dependencies: https://github.com/nodejs/node/blob/main/LICENSE).\n`);

const KREW_OS = { linux: 'linux', windows: 'windows' };
const platforms = [];
const sizes = [];
for (const t of opts.target) {
  const [name, binary] = t.split('=');
  const m = /^(linux|windows)-(amd64|arm64)$/.exec(name ?? '');
  if (!m || !binary || !existsSync(binary)) throw new Error(`--target ${t}: want <linux|windows>-<amd64|arm64>=<an existing node binary>`);
  const [, os, arch] = m;
  const exe = os === 'windows' ? 'kubectl-retina.exe' : 'kubectl-retina';
  const dir = join(out, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, exe);
  copyFileSync(binary, file);
  chmodSync(file, 0o755);
  execFileSync(opts.node, [opts.postject, file, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', FUSE], { stdio: ['ignore', 'ignore', 'inherit'] });
  copyFileSync(license, join(dir, 'LICENSE'));
  const archive = `kubectl-retina_${os}_${arch}.tar.gz`;
  // Fixed owner and mtime: the same inputs give the same archive (and sha256).
  execFileSync('tar', ['-C', dir, '--owner=0', '--group=0', '--numeric-owner', '--mtime=1970-01-01', '--use-compress-program=gzip -n', '-cf', join(out, archive), exe, 'LICENSE']);
  const sha256 = createHash('sha256').update(readFileSync(join(out, archive))).digest('hex');
  platforms.push({ os: KREW_OS[os], arch, uri: `${urlBase}/${archive}`, sha256, exe });
  sizes.push(`${name}: ${exe} ${(statSync(file).size / 1048576).toFixed(1)} MiB, ${archive} ${(statSync(join(out, archive)).size / 1048576).toFixed(1)} MiB`);
}

// krew's manifest (krew.sigs.k8s.io "Writing Krew plugin manifests"): one platform per archive.
const manifest = {
  apiVersion: 'krew.googlecontainertools.github.com/v1alpha2',
  kind: 'Plugin',
  metadata: { name: 'retina' },
  spec: {
    version: `v${pkg.version}`,
    homepage: pkg.homepage ?? 'https://github.com/retina-ts/retina-ts',
    shortDescription: 'Packet captures on Kubernetes nodes with retina-ts',
    description: 'kubectl retina capture create|list|delete|download runs packet captures (tcpdump on Linux, '
      + "pktmon on Windows) on the nodes or pods you select, as Microsoft Retina's kubectl plugin does, for "
      + 'clusters running retina-ts. One executable per platform: no Node.js needed.',
    platforms: platforms.map((p) => ({
      selector: { matchLabels: { os: p.os, arch: p.arch } },
      uri: p.uri,
      sha256: p.sha256,
      files: [{ from: p.exe, to: '.' }, { from: 'LICENSE', to: '.' }],
      bin: p.exe,
    })),
  },
};
writeFileSync(join(out, 'retina.yaml'), stringify(manifest, { lineWidth: 0 }));
process.stdout.write(`kubectl-plugin: ${out}\n  ${sizes.join('\n  ')}\n  krew manifest: ${join(out, 'retina.yaml')}\n`);
