import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { splitLines } from './lines.js';
import { ResponseTooLargeError } from './rest-errors.js';

async function* chunks(...parts: string[]): AsyncGenerator<Buffer> {
  for (const p of parts) yield Buffer.from(p);
}
async function all(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of it) out.push(l);
  return out;
}

describe('splitLines', () => {
  it('joins lines split across chunks, drops CR and blank lines, keeps a last line without newline', async () => {
    let bytes = 0;
    const lines = await all(splitLines(chunks('{"a":', '1}\r\n\n{"b"', ':2}\n{"c":3}'), 100, 'GET /x', (n) => (bytes += n)));
    assert.deepEqual(lines, ['{"a":1}', '{"b":2}', '{"c":3}']);
    assert.equal(bytes, 25);
  });
  it('fails with the request and the cap when one line grows past it, within a chunk or across chunks', async () => {
    await assert.rejects(all(splitLines(chunks('ok\n', 'x'.repeat(11), '\n'), 10, 'GET /api/v1/pods')), (e: unknown) => {
      assert.ok(e instanceof ResponseTooLargeError);
      assert.equal(e.message, 'GET /api/v1/pods: one watch line exceeds the cap of 10 bytes');
      return true;
    });
    await assert.rejects(all(splitLines(chunks('xxxxxx', 'xxxxxx', 'x\n'), 10, 'GET /y')), ResponseTooLargeError);
    assert.deepEqual(await all(splitLines(chunks('x'.repeat(10), '\n'), 10, 'GET /z')), ['x'.repeat(10)], 'exactly the cap is fine');
  });
});
