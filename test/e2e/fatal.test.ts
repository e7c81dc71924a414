/**
 * End to end: a bug that escapes every handler (an uncaught exception, an unhandled rejection) is
 * not swallowed. The real agent process (dist/src/cli/agent-main.js) is started with a preload that
 * only installs a SIGUSR2 handler which throws from a fresh call stack, the way a bug in a timer or a
 * socket callback would; nothing in the agent knows about it. The agent must log the error with its
 * stack, stop its plugins (bounded), and exit with EXIT_FATAL so the kubelet restarts it. The shared
 * scaffold (exitOnFatal, also the operator's) is run in a child process with a cleanup that hangs.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { EXIT_FATAL } from '../../src/cli/command.js';
import { AgentProcess, ROOT, agentEnv, get, nodeBinary, type LogLine } from './agent-process.js';

const dir = mkdtempSync(join(tmpdir(), 'retina-fatal-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A preload that turns SIGUSR2 into an uncaught exception or an unhandled rejection. */
function preload(kind: 'exception' | 'rejection'): string {
  const p = join(dir, `fault-${kind}.mjs`);
  const fault = kind === 'exception'
    ? "setImmediate(() => { throw new Error('injected bug: uncaught'); });"
    : "setImmediate(() => { void Promise.reject(new Error('injected bug: unhandled rejection')); });";
  writeFileSync(p, `process.on('SIGUSR2', () => { ${fault} });\n`);
  return p;
}

function config(): string {
  const p = join(dir, 'config.yaml');
  writeFileSync(p, 'apiServer:\n  host: 127.0.0.1\n  port: 0\nenabledPlugin: [linuxutil]\nmetricsIntervalDuration: 1s\n');
  return p;
}

function fatalLine(lines: readonly LogLine[], msg: string): LogLine {
  const l = lines.find((x) => x.msg === msg);
  assert.ok(l, `no "${msg}" line`);
  return l;
}

for (const [kind, msg, text] of [
  ['exception', 'uncaught exception; cleaning up and exiting', 'injected bug: uncaught'],
  ['rejection', 'unhandled rejection; cleaning up and exiting', 'injected bug: unhandled rejection'],
] as const) {
  test(`an ${kind === 'exception' ? 'uncaught exception' : 'unhandled rejection'} in the agent is logged with its stack, cleaned up, and exits ${EXIT_FATAL}`, async () => {
    await using agent = new AgentProcess({
      command: [nodeBinary(), '--import', preload(kind), `${ROOT}dist/src/cli/agent-main.js`],
      args: ['--config', config()],
      env: agentEnv(),
    });
    const port = await agent.listening();
    await agent.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
    assert.equal((await get(port, '/healthz')).status, 200);
    agent.child.kill('SIGUSR2');
    const exit = await agent.waitExit(5_000);
    assert.deepEqual(exit, { code: EXIT_FATAL, signal: null }, `stderr:\n${agent.stderr}`);
    const lines = agent.logLines();
    const fatal = fatalLine(lines, msg);
    assert.equal(fatal.level, 'error');
    const error = fatal['error'] as { message: string; stack: string };
    assert.equal(error.message, text);
    assert.match(error.stack, new RegExp(`Error: ${text}\\n\\s+at `), 'the log line carries the stack');
    // The best-effort cleanup ran: the plugin was stopped before the exit.
    assert.ok(lines.indexOf(fatal) < lines.findIndex((l) => l.msg === 'plugin stopped' && l['plugin'] === 'linuxutil'), `linuxutil not stopped after the fatal line:\n${agent.stderr}`);
  });
}

test('exitOnFatal (agent and operator): a cleanup that hangs is cut off, and the exit status is still EXIT_FATAL', async () => {
  const script = join(dir, 'scaffold.mjs');
  writeFileSync(script, [
    `import { exitOnFatal } from ${JSON.stringify(`${ROOT}dist/src/cli/command.js`)};`,
    `import { createLogger } from ${JSON.stringify(`${ROOT}dist/src/log/index.js`)};`,
    "const fatal = exitOnFatal(createLogger({ level: 'info' }), 300);",
    'fatal.onExit(() => new Promise(() => undefined));',
    "setTimeout(() => { throw new Error('boom in a timer'); }, 10);",
    'setInterval(() => undefined, 1000);',
    '',
  ].join('\n'));
  await using child = new AgentProcess({ command: [nodeBinary(), script], env: agentEnv() });
  const t0 = Date.now();
  const exit = await child.waitExit(5_000);
  assert.deepEqual(exit, { code: EXIT_FATAL, signal: null }, `stderr:\n${child.stderr}`);
  assert.ok(Date.now() - t0 < 3_000, 'the cleanup bound (300 ms) was not kept');
  const lines = child.logLines();
  assert.match((fatalLine(lines, 'uncaught exception; cleaning up and exiting')['error'] as { stack: string }).stack, /boom in a timer\n\s+at Timeout/);
  fatalLine(lines, 'cleanup after the fatal error took too long');
});

test('exitOnFatal: a log stream that fails every write (as a broken pipe does) still lets the process exit', async () => {
  const script = join(dir, 'scaffold-bad-log.mjs');
  writeFileSync(script, [
    "import { Writable } from 'node:stream';",
    `import { exitOnFatal } from ${JSON.stringify(`${ROOT}dist/src/cli/command.js`)};`,
    `import { createLogger } from ${JSON.stringify(`${ROOT}dist/src/log/index.js`)};`,
    // Every write is answered with an 'error' event, without destroying the stream: each log line is
    // one more uncaught exception, the way process.stderr reports EPIPE once its reader has gone.
    "class Broken extends Writable { _write(c, e, cb) { cb(); process.nextTick(() => this.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))); } }",
    "const fatal = exitOnFatal(createLogger({ level: 'info', stream: new Broken() }), 300);",
    "fatal.onExit(async () => undefined);",
    "setTimeout(() => { throw new Error('boom in a timer'); }, 10);",
    'setInterval(() => undefined, 1000);',
    '',
  ].join('\n'));
  await using child = new AgentProcess({ command: [nodeBinary(), script], env: agentEnv() });
  const exit = await child.waitExit(5_000);
  assert.deepEqual(exit, { code: EXIT_FATAL, signal: null });
});
