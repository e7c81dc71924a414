import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { droppable, parseSmaps } from './memory.js';

// Entries as /proc/<pid>/smaps prints them (this kernel, 6.18), fields trimmed to a few.
const SMAPS = `00400000-00600000 r--p 00000000 fd:01 131  /usr/bin/node
Size:               2048 kB
Rss:                1500 kB
Anonymous:             0 kB
00600000-02000000 r-xp 00200000 fd:01 131  /usr/bin/node
Rss:               20000 kB
Anonymous:             0 kB
02000000-02100000 r--p 01c00000 fd:01 131  /usr/bin/node
Rss:                1024 kB
Anonymous:          1024 kB
02100000-02200000 rw-p 01d00000 fd:01 131  /usr/bin/node
Rss:                 512 kB
Anonymous:           512 kB
02200000-02300000 rw-p 00000000 00:00 0  [heap]
Rss:                 900 kB
Anonymous:           900 kB
7f0000000000-7f0000100000 r--s 00000000 00:0f 1061  anon_inode:bpf-map
Rss:                1024 kB
Anonymous:             0 kB
7f0000100000-7f0000200000 r--p 00000000 fd:01 99  /opt/old.so (deleted)
Rss:                  64 kB
Anonymous:             0 kB
7f0000200000-7f0000300000 r--p 00000000 fd:01 77  /usr/lib/libc.so.6
Rss:                   0 kB
Anonymous:             0 kB
7f0000300000-7f0000400000 r--s 00000000 fd:01 78  /usr/share/shared.dat
Rss:                  64 kB
Anonymous:             0 kB
7f0000400000-7f0000500000 r-xp 00000000 fd:01 79  /usr/lib/cut.so
Rss:                  64 kB
`;

test('smaps: only private read-only mappings of regular files, with no copied page and something resident, are droppable', () => {
  const maps = parseSmaps(SMAPS);
  assert.equal(maps.length, 10);
  assert.deepEqual(maps[1], { start: 0x600000n, end: 0x2000000n, perms: 'r-xp', path: '/usr/bin/node', rssKb: 20000, anonymousKb: 0 });
  assert.deepEqual(maps.filter(droppable).map((m) => [m.path, m.perms, m.rssKb]), [['/usr/bin/node', 'r--p', 1500], ['/usr/bin/node', 'r-xp', 20000]]);
  // Left alone: relocated .data.rel.ro (copied pages), .data, the heap, a ring buffer, a deleted file,
  // nothing resident, a shared mapping, an entry whose Anonymous line is missing.
});

// In a process of its own: the test runner's own pages are not this test's to drop.
test('releaseCleanFilePages drops resident pages of the node binary and the process runs on', () => {
  const mod = new URL('./memory.js', import.meta.url).href;
  const script = `
    import { readFileSync } from 'node:fs';
    const { releaseCleanFilePages } = await import(${JSON.stringify(mod)});
    const fileKb = () => Number(/^RssFile:\\s+(\\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
    const before = fileKb();
    const r = releaseCleanFilePages();
    const after = fileKb();
    // Code runs after the drop (pages come back on use): a JSON round trip, a regexp, a dynamic import.
    const again = JSON.parse(JSON.stringify({ x: /a+/.exec('caab')[0] }));
    await import('node:zlib');
    console.log(JSON.stringify({ before, after, ...r, again }));
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { before: number; after: number; mappings: number; bytes: number; refused: number; again: { x: string } };
  assert.equal(out.refused, 0);
  assert.ok(out.mappings > 0, 'some mappings dropped');
  assert.ok(out.bytes >= 10 << 20, `dropped ${out.bytes} bytes; node's binary alone holds tens of MB after start-up`);
  assert.ok(out.after < out.before - 5 * 1024, `RssFile ${out.before} kB before, ${out.after} kB after`);
  assert.deepEqual(out.again, { x: 'aa' });
  // The test process's own smaps still parses into mappings (the format read above is this kernel's).
  assert.ok(parseSmaps(readFileSync('/proc/self/smaps', 'utf8')).some((m) => m.path === process.execPath || m.path.endsWith('/node')));
});
