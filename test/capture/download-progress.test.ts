import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Progress } from '../../src/cli/capture/download-progress.js';

describe('download progress bar', () => {
  it('redraws in place on a terminal and ends with the total and rate', async () => {
    let text = '';
    const p = new Progress({ isTTY: true, write: (s: string) => (text += s) }, 'f.tar.gz', 4 * 1048576);
    p.add(1048576);
    await new Promise((r) => setTimeout(r, 110));
    p.add(1048576);
    p.add(1048576); // within 100 ms of the last draw: not drawn
    p.finish();
    const draws = text.split('\r').filter(Boolean);
    assert.equal(draws.length, 3, JSON.stringify(text));
    assert.match(draws[0] ?? '', /^f\.tar\.gz \[#{6}\.{18}\]  25% 1\.0 MiB\/4\.0 MiB$/);
    assert.match(draws[1] ?? '', /\[#{12}\.{12}\]  50% 2\.0 MiB\/4\.0 MiB$/);
    assert.match(draws[2] ?? '', /\[#{18}\.{6}\]  75% 3\.0 MiB\/4\.0 MiB in \d+\.\d s \([\d.]+ (MiB|KiB)\/s\)\n$/);
    assert.equal(p.bytes, 3 * 1048576);
  });
  it('writes one summary line when stderr is not a terminal', () => {
    let text = '';
    const p = new Progress({ write: (s: string) => (text += s) }, 'x', undefined);
    p.add(2048);
    p.finish();
    assert.match(text, /^x 2\.0 KiB in \d+\.\d s \(.*\/s\)\n$/);
  });
});
