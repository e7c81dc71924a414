/**
 * Stored flow logs on a real kernel: the built agent (dropreason; hubble.export.static with an allow
 * list that takes only this test's traffic; a 1 MB file so it rotates, gzip) in a namespace the test
 * made, and N UDP datagrams the test's nftables rule drops. The files (live and rotated, gunzipped)
 * hold exactly N lines, one per datagram, none twice; the counters say N selected and N written; and
 * every line is byte for byte what the real `hubble observe -o json` prints for the same flow from
 * the agent's Hubble service; and each, as the OTLP sink sends it (src/export/otlp), carries the
 * kernel's drop reason in `hubble.drop_reason` (docs/flow-logs.md). Needs root, BTF, the built
 * native objects and the hubble CLI.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { ROOT } from '../e2e/agent-process.js';
import { Netns, NsAgent, droppingPair, metric, requireKernel } from './netns.js';
import { UDP_SEND } from './traffic.js';
import { holdDropsForThisFile } from './drop-lock.js';
import { toLogRecord } from '../../src/export/otlp/index.js';

// Its drops (or losses) and the node-level counts, apart from every other lane's (drop-lock.ts).
holdDropsForThisFile();

const BURSTS = 3;
const PER_BURST = 1200;
const N = BURSTS * PER_BURST;
const dir = mkdtempSync(join(tmpdir(), 'flowlog-'));
const file = join(dir, 'out', 'events.log');
let a: Netns | undefined;
let b: Netns | undefined;
let agent: NsAgent | undefined;
const HUBBLE_PORT = 24_791;

/** The directory holding the hubble CLI (hack/hubble/build.sh answers at once once built). */
function hubbleTools(): string {
  const r = spawnSync('bash', [`${ROOT}hack/hubble/build.sh`], { encoding: 'utf8', env: { ...process.env, HUBBLE_BUILD_IF_MISSING: 'no' } });
  if (r.status !== 0) throw new Error(`the hubble tools are not built: ${r.stderr.trim()} (make test builds them)`);
  return r.stdout.trim();
}

before(async () => {
  requireKernel();
  ({ a, b } = droppingPair('flog', 'rtflog', '10.231.7'));
  agent = new NsAgent(a, [
    'enabledPlugin: [dropreason]', 'metricsIntervalDuration: 200ms',
    'hubble:', '  enabled: true', `  listenAddress: "127.0.0.1:${HUBBLE_PORT}"`, '  maxFlows: 65536',
    '  export:', '    static:', '      enabled: true', `      filePath: ${file}`, '      fileMaxSizeMb: 1', '      fileMaxBackups: 0', '      fileCompress: true',
    '      allowList: [{source_ip: ["10.231.7.2"], destination_port: ["9999"], verdict: [DROPPED]}]', '',
  ].join('\n'));
  await agent.started(['dropreason']);
});

after(async () => {
  try {
    await agent?.[Symbol.asyncDispose]();
  } finally {
    a?.destroy();
    b?.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Every line of the live file and the rotated ones (gunzipped), oldest first. */
function fileLines(): string[] {
  const out = join(dir, 'out');
  if (!existsSync(out)) return [];
  const names = readdirSync(out).filter((n) => n.startsWith('events')).sort((x, y) => (x === 'events.log' ? 1 : y === 'events.log' ? -1 : x.localeCompare(y)));
  return names.flatMap((n) => {
    const raw = readFileSync(join(out, n));
    return (n.endsWith('.gz') ? gunzipSync(raw) : raw).toString('utf8').split('\n').filter((l) => l !== '');
  });
}

test('exactly the flows the test made, in rotated gzipped files, each line as `hubble observe -o json` prints it', { timeout: 180_000 }, async () => {
  const ag = agent as NsAgent;
  for (let i = 0; i < BURSTS; i++) await (b as Netns).node(UDP_SEND, [String(PER_BURST), '10.231.7.1', '9999', '64']);
  const written = await ag.until(() => {
    const m = ag.metrics();
    const w = metric(m, 'controlplane_networkobservability_flow_log_records_total', { sink: 'file', result: 'written' });
    return w >= N ? w : undefined;
  }, `${N} records written`, 60_000);
  await new Promise((r) => setTimeout(r, 1500)); // a late extra would show now
  const m = ag.metrics();
  assert.equal(metric(m, 'controlplane_networkobservability_flow_log_records_total', { sink: 'file', result: 'written' }), N, `written: ${written}`);
  assert.equal(metric(m, 'controlplane_networkobservability_flow_log_flows_total', { selected: 'true' }), N);
  assert.ok(!/flow_log_records_total\{[^}]*result="dropped"/.test(m), 'nothing dropped');

  // Rotation happened during the run, and the rotated files were gzipped.
  const names = readdirSync(join(dir, 'out'));
  assert.ok(names.some((n) => /^events-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log\.gz$/.test(n)), `a rotated .gz file: ${names.join(' ')}`);
  const lines = fileLines();
  assert.equal(lines.length, N, 'one line per datagram');
  assert.equal(new Set(lines).size, N, 'none twice');
  for (const l of lines) {
    const r = JSON.parse(l) as { flow: { IP: { source: string; destination: string }; l4: { UDP: { destination_port: number } }; verdict: string }; node_name: string; time: string };
    assert.equal(r.flow.IP.source, '10.231.7.2');
    assert.equal(r.flow.l4.UDP.destination_port, 9999);
    assert.equal(r.flow.verdict, 'DROPPED');
    // The OTLP LogRecord of this stored record (the sink's encoder, the same line as its body).
    const attrs = new Map(toLogRecord(r, '0', l).attributes);
    assert.equal(attrs.get('hubble.verdict'), 'DROPPED');
    assert.equal(attrs.get('hubble.drop_reason'), 'NETFILTER_DROP', `the kernel's reason for the nftables drop: ${l}`);
  }

  // The real hubble CLI's JSON for the same flows (from the agent's ring): the same bytes.
  const hubble = join(hubbleTools(), 'hubble');
  const run = spawnSync('ip', ['netns', 'exec', (a as Netns).name, hubble, 'observe', '--server', `127.0.0.1:${HUBBLE_PORT}`, '-o', 'json', '--last', String(65_536), '--from-ip', '10.231.7.2', '--to-port', '9999', '--verdict', 'DROPPED'], {
    encoding: 'utf8', maxBuffer: 64 << 20, timeout: 60_000, env: { ...process.env, HUBBLE_CONFIG: '/dev/null' },
  });
  assert.equal(run.status, 0, run.stderr);
  const cli = run.stdout;
  const cliLines = new Set(cli.split('\n').filter((l) => l.includes('"flow"')));
  assert.equal(cliLines.size, N, 'the CLI sees the same flows');
  const differ = lines.filter((l) => !cliLines.has(l));
  assert.deepEqual(differ.slice(0, 2), [], `${differ.length} lines differ from hubble observe -o json`);
});
