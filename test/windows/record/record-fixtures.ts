/**
 * `.\build.ps1 record` on a Windows node: records the documents the Windows parsers read into --out
 * (record.ts says what and how). Exit 1 when a document did not parse, 2 for bad flags.
 */
import { parseArgs } from 'node:util';
import { record } from './record.js';

const { values } = parseArgs({ options: { out: { type: 'string' }, max: { type: 'string', default: '3' }, 'keep-addresses': { type: 'boolean', default: false } } });
if (!values.out) {
  process.stderr.write('usage: record-fixtures.js --out DIR [--max N] [--keep-addresses]\n');
  process.exit(2);
}
const r = await record(values.out, Number(values.max), values['keep-addresses'] === true);
process.stdout.write(`${JSON.stringify(r)}\n`);
process.exit(r.problems.length ? 1 : 0);
