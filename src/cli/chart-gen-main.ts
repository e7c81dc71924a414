/**
 * `make chart-gen`: writes the chart's generated files into charts/retina: the config sections of
 * values.schema.json from the key specs (src/chart/schema.ts), the Retina entries and retina-keys.yaml
 * (src/chart/files.ts). Usage: node dist/src/cli/chart-gen-main.js [chart dir] [--check]
 * (--check: exit 1 naming the stale file instead of writing).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chartSchema } from './chart-specs.js';
import { retinaKeysYaml, schemaText } from '../chart/index.js';

const args = process.argv.slice(2);
const check = args.includes('--check');
const dir = args.find((a) => !a.startsWith('--')) ?? 'charts/retina';
const files = { schema: join(dir, 'values.schema.json'), keys: join(dir, 'retina-keys.yaml') };
const schema = await chartSchema(JSON.parse(readFileSync(files.schema, 'utf8')));
const want = { schema: schemaText(schema), keys: retinaKeysYaml(schema) };
let stale = 0;
for (const k of ['schema', 'keys'] as const) {
  if (readFileSync(files[k], 'utf8') === want[k]) continue;
  if (check) {
    process.stderr.write(`${files[k]} is stale: run make chart-gen\n`);
    stale++;
  } else {
    writeFileSync(files[k], want[k]);
    process.stdout.write(`wrote ${files[k]}\n`);
  }
}
process.exitCode = stale ? 1 : 0;
