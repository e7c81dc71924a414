// One esbuild bundle per command, in a folder that runs on its own (make bundle):
//   build/bundle/<os>-<arch>/<command>.mjs   the entry (ESM; lazy parts split into chunks)
//   .../<name>-<hash>.mjs                    code loaded by dynamic import (OS plugin lists, the
//                                           Kubernetes client, client-node), loaded only when used
//   .../build/koffi/<triplet>/koffi.node     koffi's native module, this target's only
//   .../native-linux/<name>/<name>.bpf.o     the eBPF objects (linux), found like in the checkout
//   .../native-windows/retina-etw.dll        the native ETW consumer (win32), found like in the checkout
//   .../charts/retina/crds/                  the CRDs the operator installs
//   .../proto/hubble/                        the Hubble .proto files the agent's gRPC service loads
//   .../proto/opentelemetry/                 the OTLP logs .proto files (flowLogs.otlp.*), loaded only when configured
//   .../package.json                         name and version (--version, and the package root)
//   .../retina-agent.cjs, retina-agent.blob  linux: the agent's start-up snapshot (src/cli/agent-snapshot.ts)
//                                           and its source, for `node --snapshot-blob retina-agent.blob --`;
//                                           made by this node (the image remakes it with its own)
//   .../vendor/<package>.cjs                 linux: the packages the snapshot leaves out, loaded on first use
//   node hack/bundle.mjs [--os linux|win32] [--arch x64|arm64] [--sourcemap] [--out DIR]
import { build } from 'esbuild';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildAgentSnapshot, makeAgentSnapshot } from './snapshot.mjs';

/** The commands that exist: adding one (capture, kubectl-retina) is one line here. */
export const COMMANDS = {
  'retina-agent': 'src/cli/agent-main.ts',
  'retina-operator': 'src/cli/operator-main.ts',
  'kubectl-retina': 'src/cli/kubectl-retina-main.ts',
  'retina-capture': 'src/cli/capture-workload-main.ts',
};

const root = join(dirname(new URL(import.meta.url).pathname), '..');
const { values: opts } = parseArgs({
  options: {
    os: { type: 'string', default: process.platform },
    arch: { type: 'string', default: process.arch },
    sourcemap: { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});
const out = opts.out ?? join(root, 'build', 'bundle', `${opts.os === 'win32' ? 'windows' : opts.os}-${opts.arch}`);
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

await build({
  absWorkingDir: root,
  entryPoints: Object.entries(COMMANDS).map(([name, src]) => ({ out: name, in: src })),
  outdir: out,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  outExtension: { '.js': '.mjs' },
  // Chunks sit beside the entries: koffi's require('./build/koffi/<triplet>/koffi.node') resolves
  // from the chunk that holds koffi.
  chunkNames: '[name]-[hash]',
  // koffi requires its native module by a path relative to itself; it is copied beside the bundle
  // under the same relative path, so the require stays as written.
  external: ['*.node'],
  // CommonJS dependencies (winston, prom-client, koffi) call require() for Node built-ins.
  banner: { js: "import { createRequire as __retinaRequire } from 'node:module'; const require = __retinaRequire(import.meta.url);" },
  sourcemap: opts.sourcemap ? 'linked' : false,
  legalComments: 'none',
  // Less text for V8 to scan at start-up: 4-15 % less CPU to the first /metrics answer in two runs
  // (bench/agent/retina.bench.ts, bench/agent/README.md). Identifiers stay, so stack traces read as before.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
});

// The pipeline's worker thread and the packetparser decoder it loads by URL (pipelineWorkers): ES
// modules of their own beside the entries, named as in dist/, so `new URL('./worker-thread.js',
// import.meta.url)` (src/pipeline/workers.ts) and packetparser's RAW_DECODER_MODULE find them from the
// ES bundle's chunks and from the snapshot's script alike (both sit in this folder).
await build({
  absWorkingDir: root,
  entryPoints: [
    { out: 'worker-thread', in: 'src/pipeline/worker-thread.ts' },
    ...(opts.os === 'linux' ? [{ out: 'raw-decoder', in: 'src/plugins/linux/packetparser/raw-decoder.ts' }] : []),
  ],
  outdir: out, bundle: true, format: 'esm', platform: 'node', target: 'node22', external: ['*.node'],
  banner: { js: "import { createRequire as __retinaRequire } from 'node:module'; const require = __retinaRequire(import.meta.url);" },
  legalComments: 'none', minifyWhitespace: true, minifySyntax: true, logLevel: 'warning',
});

const triplet = `${opts.os}_${opts.arch}`;
const koffi = join(root, 'node_modules', 'koffi', 'build', 'koffi', triplet, 'koffi.node');
if (!existsSync(koffi)) throw new Error(`koffi has no native module for ${triplet} (${koffi})`);
cpSync(koffi, join(out, 'build', 'koffi', triplet, 'koffi.node'));

if (opts.os === 'linux') {
  for (const name of readdirSync(join(root, 'native-linux'))) {
    const obj = join(root, 'native-linux', name, `${name}.bpf.o`);
    if (name === 'ringbench' || !existsSync(obj)) continue; // ringbench is a benchmark's, not the agent's
    cpSync(obj, join(out, 'native-linux', name, `${name}.bpf.o`));
  }
}
if (opts.os === 'win32') {
  // the native ETW consumer the pktmon plugin drains (mk/windows.mk builds it with mingw-w64)
  const dll = join(root, 'native-windows', 'retina-etw.dll');
  if (!existsSync(dll)) throw new Error(`the Windows bundle needs ${dll}: make native-windows (mingw-w64)`);
  cpSync(dll, join(out, 'native-windows', 'retina-etw.dll'));
}
cpSync(join(root, 'charts', 'retina', 'crds'), join(out, 'charts', 'retina', 'crds'), { recursive: true });
cpSync(join(root, 'proto', 'hubble'), join(out, 'proto', 'hubble'), { recursive: true });
cpSync(join(root, 'proto', 'opentelemetry'), join(out, 'proto', 'opentelemetry'), { recursive: true });
writeFileSync(join(out, 'package.json'), JSON.stringify({ name: pkg.name, version: pkg.version, type: 'module', private: true }, null, 2) + '\n');
// The snapshot's script and vendor/ for every Linux bundle (the same files on each architecture); the blob only
// for this machine's, made by a node that runs here (the image of another architecture starts without it).
if (opts.os === 'linux') await buildAgentSnapshot(root, out);
if (opts.os === 'linux' && process.platform === 'linux' && opts.arch === process.arch) {
  // Made by the node the image ships and the tests run (.cache/node), which is also make's node when the
  // machine's is older than 22; a blob loads only in the Node build that made it.
  const pinned = join(root, '.cache', 'node', 'bin', 'node');
  makeAgentSnapshot(existsSync(pinned) ? pinned : process.execPath, out);
}
process.stdout.write(`bundled ${Object.keys(COMMANDS).join(', ')} into ${out}\n`);
