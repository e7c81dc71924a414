/**
 * The layer rules themselves: `make lint` runs dependency-cruiser with .dependency-cruiser.cjs over
 * src/, where today nothing breaks them, so a rule that forbade nothing would pass unnoticed. Here the
 * same config runs over a scratch tree shaped like src/ with imports STYLE.md forbids (and some it
 * allows), and must name exactly the forbidden ones.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** Each file of the scratch tree and the src/ paths it imports. */
const tree: Record<string, string[]> = {
  'src/plugins/linux/p/index.ts': ['enricher/index', 'cache/index', 'k8s/index', 'metrics/module/index', 'metrics/index', 'flow/index', 'config/index', 'plugin/index', 'ffi/linux/index', 'log/index'],
  'src/plugins/windows/w/index.ts': ['ffi/linux/index'],
  'src/ffi/linux/index.ts': ['plugin/index', 'config/index', 'metrics/index', 'plugins/linux/p/index'],
  'src/k8s/index.ts': ['cache/index', 'config/index', 'metrics/index', 'enricher/index'],
  'src/enricher/index.ts': ['flow/index', 'metrics/module/index'],
  'src/cache/index.ts': ['flow/index'],
  'src/cli/agent.ts': ['metrics/module/index', 'k8s/index', 'k8s/rest', 'plugins/linux/p/index', 'pipeline/index', 'server/hubble/index', 'stray/index'],
  'src/k8s/rest.ts': ['k8s/index'],
  // The flow pipeline: the enricher, the cache, k8s and the Metrics Module yes; plugins, ffi, server no.
  'src/pipeline/index.ts': ['k8s/index', 'enricher/index', 'cache/index', 'metrics/module/index', 'metrics/index', 'plugin/index', 'config/index', 'flow/index', 'plugins/linux/p/index', 'ffi/linux/index', 'server/index'],
  // server/hubble has its own, narrower row than server's: no plugin contract, no pipeline.
  'src/server/index.ts': ['plugin/index', 'k8s/index'],
  'src/server/hubble/index.ts': ['k8s/index', 'flow/index', 'metrics/index', 'plugin/index', 'pipeline/index'],
  'src/metrics/module/index.ts': ['metrics/index', 'flow/index', 'config/index'],
  'src/metrics/index.ts': [],
  'src/plugin/index.ts': [],
  'src/flow/index.ts': [],
  'src/config/index.ts': [],
  'src/log/index.ts': [],
  'src/stray/index.ts': [],
};

test('dependency-cruiser flags exactly the imports the layer table forbids', () => {
  const dir = mkdtempSync(join(tmpdir(), 'retina-layers-'));
  try {
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true }, include: ['src'] }));
    for (const [file, imports] of Object.entries(tree)) {
      mkdirSync(dirname(join(dir, file)), { recursive: true });
      const up = '../'.repeat(file.split('/').length - 2);
      writeFileSync(join(dir, file), [...imports.map((i, n) => `import * as m${n} from '${up}${i}.js';`), `export const used = [${imports.map((_, n) => `m${n}`).join(', ')}];`, ''].join('\n'));
    }
    let out: string;
    try {
      out = execFileSync(process.execPath, [join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'), 'src', '--config', join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'], { cwd: dir, encoding: 'utf8', maxBuffer: 64 << 20 });
    } catch (e) {
      out = (e as { stdout?: string }).stdout ?? '';
      if (!out) throw e;
    }
    const found = (JSON.parse(out) as { summary: { violations: { from: string; to: string; rule: { name: string } }[] } }).summary.violations
      .filter((v) => v.rule.name !== 'no-circular')
      .map((v) => `${v.from} -> ${v.to} (${v.rule.name})`)
      .sort();
    assert.deepEqual(found, [
      'src/cache/index.ts -> src/flow/index.ts (cache-imports-only-down)',
      'src/cli/agent.ts -> src/k8s/rest.ts (through-index)',
      'src/cli/agent.ts -> src/stray/index.ts (layer-in-the-table)',
      'src/enricher/index.ts -> src/metrics/module/index.ts (enricher-imports-only-down)',
      'src/enricher/index.ts -> src/metrics/module/index.ts (metrics-module-only-from-pipeline)',
      'src/ffi/linux/index.ts -> src/config/index.ts (ffi-imports-only-down)',
      'src/pipeline/index.ts -> src/ffi/linux/index.ts (pipeline-imports-only-down)',
      'src/pipeline/index.ts -> src/plugins/linux/p/index.ts (pipeline-imports-only-down)',
      'src/pipeline/index.ts -> src/server/index.ts (pipeline-imports-only-down)',
      'src/server/hubble/index.ts -> src/pipeline/index.ts (server/hubble-imports-only-down)',
      'src/server/hubble/index.ts -> src/plugin/index.ts (server/hubble-imports-only-down)',
      'src/ffi/linux/index.ts -> src/metrics/index.ts (ffi-imports-only-down)',
      'src/ffi/linux/index.ts -> src/plugins/linux/p/index.ts (ffi-imports-only-down)',
      'src/k8s/index.ts -> src/enricher/index.ts (k8s-imports-only-down)',
      'src/k8s/index.ts -> src/metrics/index.ts (k8s-imports-only-down)',
      'src/plugins/linux/p/index.ts -> src/cache/index.ts (plugins-imports-only-down)',
      'src/plugins/linux/p/index.ts -> src/enricher/index.ts (plugins-imports-only-down)',
      'src/plugins/linux/p/index.ts -> src/k8s/index.ts (plugins-imports-only-down)',
      'src/plugins/linux/p/index.ts -> src/metrics/module/index.ts (metrics-module-only-from-pipeline)',
      'src/plugins/windows/w/index.ts -> src/ffi/linux/index.ts (no-cross-os-2)',
    ].sort());
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
