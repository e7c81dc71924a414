/**
 * `make chart-gen`: writes the chart's generated files (src/chart/files.ts) into charts/retina.
 * Usage: node dist/src/cli/chart-gen-main.js <chart dir>
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { retinaKeysYaml, schemaText, withRetinaEntries, type SchemaNode } from '../chart/index.js';

const dir = process.argv[2] ?? 'charts/retina';
const path = join(dir, 'values.schema.json');
const schema = withRetinaEntries(JSON.parse(readFileSync(path, 'utf8')) as SchemaNode);
writeFileSync(path, schemaText(schema));
writeFileSync(join(dir, 'retina-keys.yaml'), retinaKeysYaml(schema));
process.stdout.write(`wrote ${path} and ${join(dir, 'retina-keys.yaml')}\n`);
