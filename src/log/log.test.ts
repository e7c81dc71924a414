import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { BoundedQueueSink, createLineLogger, createLogger, type LogFields, type Logger } from './index.js';

test('BoundedQueueSink: lines beyond the queued bound are dropped and counted; the first line written once the queue drains says how many', async () => {
  const got: string[] = [];
  const state = { released: false };
  const pending: (() => void)[] = [];
  // A pipe nobody reads: writes are queued (their callbacks wait) until released.
  const stuck = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _e, cb) {
      got.push(chunk.toString());
      if (!state.released) pending.push(cb);
      else cb();
    },
  });
  const sink = new BoundedQueueSink(stuck, 1000);
  const line = `${'x'.repeat(99)}\n`;
  for (let i = 0; i < 100; i++) sink.write(line);
  await new Promise((r) => setImmediate(r));
  assert.ok(stuck.writableLength <= 1100, `queued ${stuck.writableLength} bytes`);
  assert.equal(sink.dropped, 89, 'eleven lines fit in the bound (1 written, 10 queued up to 1000 bytes), the rest dropped');
  state.released = true;
  for (const cb of pending.splice(0)) cb();
  await new Promise((r) => setImmediate(r));
  sink.write('after\n');
  await new Promise((r) => setImmediate(r));
  const all = got.join('');
  const note = all.split('\n').find((l) => l.includes('log lines dropped'));
  assert.ok(note, all.slice(-300));
  assert.equal((JSON.parse(note) as { dropped: number }).dropped, 89);
  assert.ok(all.endsWith('after\n'));
  assert.equal(sink.dropped, 0);
});

/** A stream that keeps what is written to it, line by line. */
function lineSink(): { stream: Writable; lines: string[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      lines.push(...chunk.toString().split('\n').filter((l) => l !== ''));
      cb();
    },
  });
  return { stream, lines };
}

test('the line logger writes what winston writes: the same keys in the same order, the same values, the same level filter', async () => {
  const err = new Error('boom', { cause: new Error('under') });
  const calls: [keyof Omit<Logger, 'child'>, string, LogFields | undefined, LogFields | undefined][] = [
    ['info', 'http server listening', { host: '0.0.0.0', port: 10093, scheme: 'http', auth: 'none' }, { component: 'http' }],
    ['warn', 'nested', { zeta: { b: [{ y: 2, x: 1 }], a: null }, big: 10n, gone: undefined, when: new Date(0), error: err }, undefined],
    ['error', 'the call overrides the child', { component: 'mine', plugin: 'dns' }, { component: 'plugin', plugin: 'linuxutil' }],
    ['debug', 'below the level: not written', {}, undefined],
    ['info', 'no fields', undefined, undefined],
  ];
  const run = (log: Logger): void => {
    for (const [level, msg, fields, child] of calls) (child ? log.child(child) : log)[level](msg, fields);
  };
  const early = lineSink();
  run(createLineLogger({ level: 'info', component: 'agent', stream: early.stream }));
  const late = lineSink();
  run(createLogger({ level: 'info', component: 'agent', stream: late.stream }));
  await new Promise((r) => setImmediate(r));
  const noTime = (l: string): string => l.replace(/"time":"[^"]+"/, '"time":"T"');
  assert.equal(late.lines.length, 4);
  assert.deepEqual(early.lines.map(noTime), late.lines.map(noTime));
  for (const l of early.lines) assert.ok(!Number.isNaN(Date.parse((JSON.parse(l) as { time: string }).time)), l);
});

test('the line logger hands off to another logger: its lines and its children\'s go there from then on', () => {
  const sink = lineSink();
  const got: string[] = [];
  const recording = (fields: LogFields): Logger => ({
    debug: (m, f) => got.push(JSON.stringify({ ...fields, ...f, level: 'debug', m })),
    info: (m, f) => got.push(JSON.stringify({ ...fields, ...f, level: 'info', m })),
    warn: (m, f) => got.push(JSON.stringify({ ...fields, ...f, level: 'warn', m })),
    error: (m, f) => got.push(JSON.stringify({ ...fields, ...f, level: 'error', m })),
    child: (more) => recording({ ...fields, ...more }),
  });
  const log = createLineLogger({ level: 'warn', component: 'agent', stream: sink.stream });
  const http = log.child({ component: 'http' });
  const deeper = http.child({ peer: 'p' });
  http.warn('before');
  log.info('filtered before');
  assert.equal(sink.lines.length, 1);
  log.handOff(recording({ component: 'agent' }));
  http.warn('after', { n: 1 });
  deeper.error('deep');
  log.debug('the new logger filters, not the line logger');
  assert.equal(sink.lines.length, 1, 'nothing more written by the line logger');
  assert.deepEqual(got.map((g) => JSON.parse(g) as unknown), [
    { component: 'http', n: 1, level: 'warn', m: 'after' },
    { component: 'http', peer: 'p', level: 'error', m: 'deep' },
    { component: 'agent', level: 'debug', m: 'the new logger filters, not the line logger' },
  ]);
});
