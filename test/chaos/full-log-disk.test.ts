/**
 * Chaos: a full disk for the log. The agent logs to stderr only, so stderr is a file on a 64 KiB
 * tmpfs that a filler has filled (in a private mount namespace: `unshare -m`, nothing to clean up).
 * Every log line fails with ENOSPC; the agent must keep running and serving /metrics and /healthz
 * (before the fix, Node's file stream turned the failed write into an uncaught exception and the
 * agent went into its fatal exit). Once space is freed, the log resumes and says how many lines
 * were lost and why. A stderr pipe whose reader has gone (EPIPE) is no more fatal.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { AGENT_BIN, AgentProcess, agentEnv, eventually, freePort, get } from '../e2e/agent-process.js';
import { sleep } from '../ebpf/netns.js';

const dir = mkdtempSync(join(tmpdir(), 'chaos-log-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a full log disk: the agent keeps running and serving /metrics; the log resumes with a count of the lost lines', { timeout: 90_000 }, async () => {
  if (process.getuid?.() !== 0) throw new Error('the chaos tests need root (mount namespaces)');
  const port = await freePort();
  const config = join(dir, 'config.yaml');
  writeFileSync(config, `apiServer:\n  host: 127.0.0.1\n  port: ${port}\nlogLevel: debug\nenabledPlugin: [linuxutil]\nmetricsIntervalDuration: 500ms\n`);
  const logDir = join(dir, 'logdisk');
  // The shell outlives the agent to print its exit status and log from the private tmpfs (which
  // /proc/<shell pid>/root shows meanwhile); SIGTERM to the shell is passed on to the agent.
  const script = [
    `mkdir -p ${logDir}`, `mount -t tmpfs -o size=64k chaoslog ${logDir}`,
    `dd if=/dev/zero of=${logDir}/fill bs=4k 2>/dev/null || true`,
    `echo "free=$(stat -f -c %a ${logDir})"`,
    'trap \'kill -TERM "$a"\' TERM',
    `${AGENT_BIN} --config ${config} 2>>${logDir}/agent.log & a=$!`,
    'wait "$a" || true', 'wait "$a"; echo "exit=$?"',
    `echo "--- log"; cat ${logDir}/agent.log`,
  ].join('\n');
  await using agent = new AgentProcess({ command: ['unshare', '-m', '--propagation', 'private', 'sh', '-c', script], env: agentEnv() });
  const view = (name: string): string => `/proc/${agent.pid}/root${logDir}/${name}`;
  await eventually(async () => (agent.stdout.includes('free=') ? true : undefined), 'the filler');
  assert.match(agent.stdout, /free=0\n/, 'the log disk is full before the agent starts');
  const metrics = await eventually(async () => {
    const r = await get(port, '/metrics');
    return r.status === 200 && r.body.includes('networkobservability_tcp_state') ? r.body : undefined;
  }, 'linuxutil series on /metrics', 30_000);
  assert.ok(metrics.length > 0);
  // Some seconds of debug logging into the full disk: every scrape and probe still answers.
  for (let i = 0; i < 6; i++) {
    await sleep(500);
    assert.equal(agent.exit, undefined, `the agent exited: ${agent.stdout}`);
    assert.doesNotMatch(agent.stdout, /exit=/, 'the agent is still running');
    const h = await get(port, '/healthz');
    assert.equal(h.status, 200, `/healthz: ${h.body}`);
    assert.equal((await get(port, '/metrics')).status, 200);
  }
  assert.equal(readFileSync(view('agent.log'), 'utf8'), '', 'nothing could be written');
  // Space again: the next lines are written, the first says what was lost.
  unlinkSync(view('fill'));
  agent.child.kill('SIGTERM');
  await agent.waitExit(15_000);
  assert.match(agent.stdout, /exit=0\n/, agent.stdout);
  const log = agent.stdout.split('--- log\n')[1] ?? '';
  const lines = log.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  const dropped = lines[0];
  assert.equal(dropped?.['msg'], 'log lines dropped: the log could not be written', log);
  assert.equal(dropped?.['reason'], 'ENOSPC');
  assert.ok(Number(dropped?.['dropped']) >= 5, `the startup lines were counted: ${JSON.stringify(dropped)}`);
  assert.deepEqual(lines.slice(1).map((l) => l['msg']).filter((m) => m === 'shutting down' || m === 'stopped'), ['shutting down', 'stopped']);
});

test('stderr a pipe whose reader has gone (EPIPE on every line): the agent keeps running and serving', { timeout: 60_000 }, async () => {
  const port = await freePort();
  const config = join(dir, 'config-epipe.yaml');
  writeFileSync(config, `apiServer:\n  host: 127.0.0.1\n  port: ${port}\nlogLevel: debug\nenabledPlugin: [linuxutil]\nmetricsIntervalDuration: 500ms\n`);
  await using agent = new AgentProcess({ args: ['--config', config], env: agentEnv() });
  // The reader goes before the first line: every write of the agent's stderr fails with EPIPE.
  agent.child.stderr?.destroy();
  await eventually(async () => {
    const r = await get(port, '/metrics');
    return r.status === 200 && r.body.includes('networkobservability_tcp_state') ? true : undefined;
  }, 'linuxutil series on /metrics', 30_000);
  for (let i = 0; i < 6; i++) {
    await sleep(500);
    assert.equal(agent.exit, undefined, `the agent exited: ${JSON.stringify(agent.exit)}`);
    const h = await get(port, '/healthz');
    assert.equal(h.status, 200, `/healthz: ${h.body}`);
  }
  agent.child.kill('SIGTERM');
  assert.deepEqual(await agent.waitExit(15_000), { code: 0, signal: null });
});

test('stderr a pipe nobody reads: the queued log lines stay bounded (dropped and counted), and the log says how many once it is read again', { timeout: 60_000 }, async () => {
  const logModule = new URL('../../src/log/index.js', import.meta.url).href;
  // 100 000 debug lines (~15 MB) into a pipe the parent does not read; then, once the pipe drains, one more line.
  const script = `
    const { createLogger, MAX_QUEUED_LOG_BYTES } = await import(${JSON.stringify(logModule)});
    const log = createLogger({ level: 'debug', component: 'flood' });
    for (let i = 0; i < 100000; i++) log.debug('flood line', { i, pad: 'p'.repeat(80) });
    await new Promise((r) => setTimeout(r, 200));
    process.stdout.write(JSON.stringify({ queued: process.stderr.writableLength, max: MAX_QUEUED_LOG_BYTES }) + '\\n');
    process.stderr.once('drain', () => { log.info('after the drain'); setTimeout(() => process.exit(0), 300); });`;
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  // A failed assertion must not leave the child (and this test file) waiting on its unread pipe.
  await using _kill = { [Symbol.asyncDispose]: () => Promise.resolve(void child.kill('SIGKILL')) };
  child.stderr.pause();
  let out = '';
  const stats = await new Promise<{ queued: number; max: number }>((resolve, reject) => {
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as { queued: number; max: number });
    });
    child.on('exit', (c) => reject(new Error(`exited ${c} before its report: ${out}`)));
  });
  assert.ok(stats.queued <= stats.max + 64 * 1024, `queued ${stats.queued} bytes for an unread pipe (bound ${stats.max})`);
  let err = '';
  child.stderr.on('data', (d: Buffer) => { err += d.toString(); });
  child.stderr.resume();
  const code = await new Promise<number | null>((r) => child.on('exit', r));
  assert.equal(code, 0, err.slice(-500));
  const lines = err.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
  const note = lines.find((l) => l['msg'] === 'log lines dropped: the log could not be written');
  assert.ok(note, 'the drop is reported');
  const written = lines.filter((l) => l['msg'] === 'flood line').length;
  assert.equal(written + Number(note['dropped']), 100_000, 'every line is either written or counted');
  assert.ok(Number(note['dropped']) > 90_000, `most of the 15 MB were dropped: ${String(note['dropped'])}`);
  assert.equal(lines.at(-1)?.['msg'], 'after the drain');
});
