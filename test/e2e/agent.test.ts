/**
 * End to end: `bin/retina-agent` as a real process (dist/ must be built), on loopback with a free
 * port. Covers scraping and linting /metrics, health and readiness, a failing plugin next to a
 * working one, bad configuration, and shutdown on SIGTERM and SIGINT. Needs linuxutil and infiniband
 * in the Linux plugin list, and /usr/bin/promtool (Debian's `prometheus`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AgentProcess, agentEnv, eventually, get, type LogLine } from './agent-process.js';
import { assertPromtool, lintExposition, parseExposition, series, type Exposition } from './exposition.js';

const TCP_STATE = 'networkobservability_tcp_state';
const INTERFACE_STATS = 'networkobservability_interface_stats';
const FAILED_TO_RECONCILE = 'controlplane_networkobservability_plugin_manager_failed_to_reconcile';
const PROCESS_METRICS = ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds'];
/** The agent must exit this soon after SIGTERM (the contract's 10 s). */
const STOP_MS = 10_000;

interface ReadyBody {
  status: string;
  plugins: { name: string; state: string; since: string; lastError?: string; failures: number }[];
}

const dir = mkdtempSync(join(tmpdir(), 'retina-e2e-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function configFile(name: string, yaml: string): string {
  const p = join(dir, name);
  writeFileSync(p, yaml);
  return p;
}

/** linuxutil on a free loopback port, refreshing every second, plus `extra` YAML lines. */
function agentYaml(plugins: readonly string[]): string {
  return [
    'apiServer:',
    '  host: 127.0.0.1',
    '  port: 0',
    'logLevel: debug',
    `enabledPlugin: [${plugins.join(', ')}]`,
    'metricsIntervalDuration: 1s',
    '',
  ].join('\n');
}

/** An IPv4 TCP listener on a free loopback port. */
function listen(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
}

async function scrape(port: number): Promise<{ text: string; expo: Exposition }> {
  const r = await get(port, '/metrics');
  assert.equal(r.status, 200, `/metrics answered ${r.status}: ${r.body}`);
  assert.match(r.contentType, /^text\/plain; version=0\.0\.4/);
  return { text: r.body, expo: parseExposition(r.body) };
}

/** Scrapes until linuxutil's families have samples (its first refresh may take an interval). */
function scrapeWithLinuxutil(port: number): Promise<{ text: string; expo: Exposition }> {
  return eventually(async () => {
    const s = await scrape(port);
    return series(s.expo, TCP_STATE).length && series(s.expo, INTERFACE_STATS).length ? s : undefined;
  }, `${TCP_STATE} and ${INTERFACE_STATS} on /metrics (per interface: with the default all_interfaces, only non-zero err/drop sums, as Retina, so a quiet host has none)`);
}

async function readyz(port: number): Promise<{ status: number; body: ReadyBody }> {
  const r = await get(port, '/readyz');
  assert.match(r.contentType, /^application\/json/);
  return { status: r.status, body: JSON.parse(r.body) as ReadyBody };
}

/** Every stderr line is a JSON object with time, level, msg and component. */
function assertJsonLogs(agent: AgentProcess): LogLine[] {
  const lines = agent.logLines();
  assert.ok(lines.length > 0, 'the agent logged nothing');
  for (const l of lines) {
    for (const f of ['time', 'level', 'msg', 'component'] as const) {
      assert.equal(typeof l[f], 'string', `log line lacks string field "${f}": ${JSON.stringify(l)}`);
    }
    assert.ok(!Number.isNaN(Date.parse(l.time)), `bad time in ${JSON.stringify(l)}`);
    assert.ok(['debug', 'info', 'warn', 'error'].includes(l.level), `bad level in ${JSON.stringify(l)}`);
  }
  return lines;
}

/** Sends `signal` and checks exit 0 within STOP_MS, a "stopped" line with exitCode 0, and JSON logs. */
async function assertCleanStop(agent: AgentProcess, signal: NodeJS.Signals): Promise<void> {
  const t0 = Date.now();
  agent.child.kill(signal);
  const exit = await agent.waitExit(STOP_MS);
  const tookMs = Date.now() - t0;
  assert.deepEqual(exit, { code: 0, signal: null }, `exit after ${signal}; stderr:\n${agent.stderr}`);
  assert.ok(tookMs < STOP_MS, `took ${tookMs} ms`);
  const lines = assertJsonLogs(agent);
  assert.ok(lines.some((l) => l.msg === 'shutting down' && l['signal'] === signal), `no "shutting down" line naming ${signal}`);
  const stopped = lines.find((l) => l.msg === 'stopped');
  assert.ok(stopped, `no "stopped" line; stderr:\n${agent.stderr}`);
  assert.equal(stopped['exitCode'], 0);
  assert.ok(lines.some((l) => l.msg === 'plugin stopped' && l['plugin'] === 'linuxutil'), 'linuxutil did not log "plugin stopped"');
}

/** Runs the agent with a config that must be rejected; returns its stderr. */
async function rejected(args: readonly string[], env: Record<string, string> = {}): Promise<string> {
  await using agent = new AgentProcess({ args, env: agentEnv(env) });
  const exit = await agent.waitExit(15_000);
  assert.deepEqual(exit, { code: 2, signal: null }, `expected exit status 2; stderr:\n${agent.stderr}`);
  assert.ok(!agent.stderrLines.some((l) => l.includes('http server listening')), 'the agent started serving');
  return agent.stderr;
}

test('promtool is installed (the exposition lint never skips)', () => {
  assertPromtool();
});

test('the lint allows only the listed findings on contract names', () => {
  const text = [
    '# HELP networkobservability_dns_request_count DNS requests', '# TYPE networkobservability_dns_request_count counter', 'networkobservability_dns_request_count 1',
    '# HELP retina_ts_made_up_count not in the contract', '# TYPE retina_ts_made_up_count counter', 'retina_ts_made_up_count 1',
    '# HELP networkobservability_drop_count gauge', '# TYPE networkobservability_drop_count counter', 'networkobservability_drop_count 1', '',
  ].join('\n');
  const lint = lintExposition(text);
  assert.ok(lint.findings.some((f) => f.startsWith('networkobservability_dns_request_count ')), lint.findings.join('\n'));
  // A made-up name fails, and so does a contract gauge exported as a counter (a finding not listed for it).
  assert.deepEqual(lint.disallowed.map((f) => f.split(' ')[0]).sort(), [
    'networkobservability_drop_count', 'retina_ts_made_up_count', 'retina_ts_made_up_count',
  ], lint.findings.join('\n'));
});

describe('agent with linuxutil', () => {
  let agent: AgentProcess;
  let port: number;
  before(async () => {
    // Per interface (the default sums them into interface_name="all_interfaces"): the names are checked against this host's.
    agent = new AgentProcess({ args: ['--config', configFile('linuxutil.yaml', `${agentYaml(['linuxutil'])}interfaceStatsMode: per_interface_with_veths\n`)] });
    port = await agent.listening();
    await agent.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
  });
  after(() => agent[Symbol.asyncDispose]());

  test('GET /healthz is 200', async () => {
    const r = await get(port, '/healthz');
    assert.equal(r.status, 200);
    assert.equal((JSON.parse(r.body) as { status: string }).status, 'ok');
  });

  test('GET /readyz is 200 with linuxutil running', async () => {
    const { status, body } = await readyz(port);
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.status, 'ready');
    const lu = body.plugins.find((p) => p.name === 'linuxutil');
    assert.ok(lu, `linuxutil missing from ${JSON.stringify(body)}`);
    assert.ok(['running', 'degraded'].includes(lu.state), JSON.stringify(lu));
    assert.ok(!Number.isNaN(Date.parse(lu.since)));
    assert.equal(lu.failures, 0);
    assert.equal(lu.lastError, undefined);
  });

  test('GET /metrics has linuxutil families and process metrics', async () => {
    const { expo } = await scrapeWithLinuxutil(port);
    assert.equal(expo.types.get(TCP_STATE), 'gauge');
    assert.equal(expo.types.get(INTERFACE_STATS), 'gauge');
    for (const s of series(expo, TCP_STATE)) assert.ok(s.labels['state'], `tcp_state sample without state: ${JSON.stringify(s)}`);
    const ifaces = new Set(series(expo, INTERFACE_STATS).map((s) => s.labels['interface_name'] ?? ''));
    assert.ok(!ifaces.has(''), 'an interface_stats sample lacks interface_name');
    const known = readdirSync('/sys/class/net');
    assert.ok([...ifaces].some((i) => known.includes(i)), `interface_name values ${[...ifaces].join(', ')} name none of this host's interfaces (${known.join(', ')})`);
    assert.ok(series(expo, INTERFACE_STATS).every((s) => s.labels['statistic_name']), 'an interface_stats sample lacks statistic_name');
    for (const m of PROCESS_METRICS) assert.ok(series(expo, m).length > 0 || series(expo, `${m}_count`).length > 0, `process metric ${m} missing`);
    assert.equal(series(expo, FAILED_TO_RECONCILE, { reason: 'linuxutil' }).filter((s) => s.value > 0).length, 0, 'linuxutil counted as failed');
  });

  test('the exposition passes promtool check metrics (allowlist: contract names only)', async () => {
    const { text } = await scrapeWithLinuxutil(port);
    const lint = lintExposition(text);
    assert.deepEqual(lint.disallowed, [], `promtool findings not forced by the contract:\n${lint.disallowed.join('\n')}`);
  });

  test('tcp_state follows new sockets within a few metricsIntervalDuration (1 s)', async () => {
    const listening = (e: Exposition) => series(e, TCP_STATE, { state: 'LISTEN' }).reduce((n, s) => n + s.value, 0);
    // The kernel's own count: LISTEN (0A) rows of this network namespace's socket tables, the agent's source.
    const kernelListening = (): number => ['/proc/net/tcp', '/proc/net/tcp6']
      .reduce((n, f) => n + readFileSync(f, 'utf8').split('\n').slice(1).filter((l) => l.trim().split(/\s+/)[3] === '0A').length, 0);
    await scrapeWithLinuxutil(port);
    const servers = await Promise.all([1, 2, 3].map(() => listen()));
    // The host's other listeners come and go meanwhile (make test runs its lanes side by side): the agent
    // follows when it reports what the kernel holds, our three included, with the kernel's count the same
    // just before and just after the scrape.
    let last = '';
    try {
      await eventually(async () => {
        const k0 = kernelListening();
        const ours = listening((await scrape(port)).expo);
        const k1 = kernelListening();
        last = `agent ${ours}, kernel ${k0} then ${k1}`;
        return k0 === k1 && ours === k1 ? true : undefined;
      }, `tcp_state{state="LISTEN"} equal to the kernel's LISTEN sockets, the ${servers.length} new ones included`, 10_000)
        .catch((e: unknown) => assert.fail(`${(e as Error).message}; the last look: ${last}`));
    } finally {
      await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    }
  });

  test('SIGTERM stops every plugin and exits 0 within 10 s', async () => {
    await assertCleanStop(agent, 'SIGTERM');
  });
});

describe('agent with a failing plugin (infiniband, no /sys/class/infiniband here) next to linuxutil', () => {
  let agent: AgentProcess;
  let port: number;
  before(async () => {
    agent = new AgentProcess({ args: ['--config', configFile('infiniband.yaml', `${agentYaml(['linuxutil', 'infiniband'])}interfaceStatsMode: per_interface_with_veths\n`)] });
    port = await agent.listening();
    await agent.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
  });
  after(() => agent[Symbol.asyncDispose]());

  test('GET /readyz is 503 naming infiniband with its lastError; linuxutil runs', async () => {
    const { status, body } = await eventually(async () => {
      const r = await readyz(port);
      return r.body.plugins.find((p) => p.name === 'infiniband')?.state === 'failed' ? r : undefined;
    }, 'infiniband in state "failed" on /readyz');
    assert.equal(status, 503, JSON.stringify(body));
    assert.equal(body.status, 'not ready');
    const ib = body.plugins.find((p) => p.name === 'infiniband');
    assert.ok(ib?.lastError && ib.lastError.length > 0, `infiniband has no lastError: ${JSON.stringify(ib)}`);
    assert.match(ib.lastError, /infiniband/i, 'lastError should say what is missing');
    assert.ok(ib.failures >= 1);
    const lu = body.plugins.find((p) => p.name === 'linuxutil');
    assert.ok(lu && ['running', 'degraded'].includes(lu.state), JSON.stringify(body));
  });

  test('linuxutil still serves its metrics and the failure is counted', async () => {
    const { expo } = await scrapeWithLinuxutil(port);
    const failed = series(expo, FAILED_TO_RECONCILE, { reason: 'infiniband' });
    assert.equal(failed.length, 1, `no ${FAILED_TO_RECONCILE}{reason="infiniband"}`);
    assert.ok((failed[0] as { value: number }).value >= 1);
    assert.equal(expo.types.get(FAILED_TO_RECONCILE), 'counter');
  });

  test('/healthz stays 200 and the failure is logged as JSON', async () => {
    assert.equal((await get(port, '/healthz')).status, 200);
    const lines = assertJsonLogs(agent);
    assert.ok(lines.some((l) => l.level === 'error' && l['plugin'] === 'infiniband'), 'no error line for infiniband');
  });

  test('SIGINT stops the agent with exit 0 within 10 s', async () => {
    await assertCleanStop(agent, 'SIGINT');
  });
});

describe('bad configuration exits 2 naming the key', () => {
  const cases: { key: string; yaml: string; value: string }[] = [
    { key: 'apiServer.port', yaml: 'apiServer:\n  port: 99999\n', value: '99999' },
    { key: 'enabledPlugin', yaml: 'enabledPlugin: [nope]\n', value: 'nope' },
    { key: 'logLevel', yaml: 'logLevel: loud\n', value: 'loud' },
    { key: 'metricsIntervalDuration', yaml: 'metricsIntervalDuration: 10 parsecs\n', value: '10 parsecs' },
  ];
  for (const c of cases) {
    test(`${c.key}: ${c.value}`, async () => {
      const err = await rejected(['--config', configFile(`bad-${c.key}.yaml`, c.yaml)]);
      assert.ok(err.includes(`"${c.key}"`), `stderr does not name ${c.key}:\n${err}`);
      assert.ok(err.includes(c.value), `stderr does not show the value ${c.value}:\n${err}`);
      assert.match(err, /allowed\b/, `stderr does not say what is allowed:\n${err}`);
    });
  }

  test('all four at once are all reported', async () => {
    const err = await rejected(['--config', configFile('bad-all.yaml', cases.map((c) => c.yaml).join(''))]);
    for (const c of cases) assert.ok(err.includes(`"${c.key}"`), `stderr does not name ${c.key}:\n${err}`);
  });

  test('a bad RETINA_ environment override names the variable', async () => {
    const err = await rejected([], { RETINA_LOGLEVEL: 'loud' });
    assert.ok(err.includes('"logLevel"') && err.includes('RETINA_LOGLEVEL'), err);
  });

  test('--config /nonexistent', async () => {
    const err = await rejected(['--config', '/nonexistent']);
    assert.ok(err.includes('--config') && err.includes('/nonexistent'), err);
  });
});

describe('keys that are misspelt or contradict each other: warned at start, the agent runs on', () => {
  test('a typo in the file and in RETINA_*, with the closest key; pod-level keys without enablePodLevel, naming the keys', async () => {
    const config = configFile('contradictory.yaml', `${agentYaml(['linuxutil'])}enablePodLevl: true\nremoteContext: true\n`);
    await using agent = new AgentProcess({ args: ['--config', config], env: agentEnv({ RETINA_ENABLEANNOTATIONZ: 'true' }) });
    await agent.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
    const lines = assertJsonLogs(agent);
    const unknown = lines.filter((l) => l.level === 'warn' && l.msg === 'configuration key not used by this agent').map((l) => [l['key'], l['source'], l['didYouMean']]);
    assert.deepEqual(unknown, [['enablePodLevl', 'file', 'enablePodLevel'], ['RETINA_ENABLEANNOTATIONZ', 'env', 'enableAnnotations']], agent.stderr);
    const contradictions = lines.filter((l) => l.level === 'warn' && l.msg === 'contradictory configuration');
    assert.deepEqual(contradictions.map((l) => l['keys']), [['remoteContext', 'enablePodLevel']], agent.stderr);
    assert.match(String(contradictions[0]?.['problem']), /remoteContext: true has no effect while nothing wants flows: enablePodLevel, hubble.enabled, hubble.metrics.enabled and the flow-log exporters/);
    await assertCleanStop(agent, 'SIGTERM');
  });
});

describe('pipeline workers (pipelineWorkers)', () => {
  test('a bad count names the key and what is allowed', async () => {
    for (const bad of ['many', '65', '-1']) {
      const err = await rejected(['--config', configFile(`workers-${bad}.yaml`, `${agentYaml(['linuxutil'])}pipelineWorkers: ${bad}\n`)]);
      assert.ok(err.includes('"pipelineWorkers"') && err.includes('or auto'), err);
    }
  });

  test('two workers at pod level: started, /metrics served, and SIGTERM stops them with the agent, exit 0', async () => {
    const config = configFile('workers.yaml', `${agentYaml(['linuxutil'])}enablePodLevel: true\npipelineWorkers: 2\n`);
    await using agent = new AgentProcess({ args: ['--config', config], env: agentEnv() });
    const port = await agent.listening();
    const started = await agent.waitForLog((l) => l.msg === 'pipeline workers started', '"pipeline workers started"');
    assert.equal(started['workers'], 2);
    await agent.waitForLog((l) => l.msg === 'plugins started', '"plugins started"');
    assert.match((await scrape(port)).text, /^nodejs_heap_size_used_bytes /m);
    await assertCleanStop(agent, 'SIGTERM');
  });
});

describe('a signal during start-up', () => {
  test('SIGTERM before the plugins start: a clean stop with exit 0, no plugin started, not death by the signal', async () => {
    // An API server that accepts connections and never answers: the pod-level start-up waits up to
    // 3 s for the API server's addresses, so the signal lands while the agent is still starting.
    const silent = await listen();
    const sockets = new Set<import('node:net').Socket>();
    silent.on('connection', (s) => sockets.add(s));
    try {
      const port = (silent.address() as { port: number }).port;
      const kubeconfig = configFile('silent-kubeconfig.yaml', [
        'apiVersion: v1', 'kind: Config', 'current-context: silent',
        'clusters:', '- name: silent', '  cluster:', `    server: https://127.0.0.1:${port}`, '    insecure-skip-tls-verify: true',
        'users:', '- name: u', '  user:', '    token: t',
        'contexts:', '- name: silent', '  context:', '    cluster: silent', '    user: u', '',
      ].join('\n'));
      const config = configFile('startup.yaml', `${agentYaml(['linuxutil'])}enablePodLevel: true\n`);
      await using agent = new AgentProcess({ args: ['--config', config, '--kubeconfig', kubeconfig], env: agentEnv({ NODE_NAME: 'e2e-node' }) });
      await agent.waitForLog((l) => l.msg === 'starting retina-agent', '"starting retina-agent"');
      // Served before the plugins (and the pipeline, waiting for the API server) start: /metrics with
      // the registry as it is, /healthz live, /readyz 503 with the plugin `starting`.
      const served = await agent.listening();
      const m = await get(served, '/metrics');
      assert.equal(m.status, 200);
      assert.ok(m.body.includes('process_cpu_seconds_total'), m.body.slice(0, 300));
      assert.equal((await get(served, '/healthz')).status, 200);
      const r = await get(served, '/readyz');
      assert.equal(r.status, 503, r.body);
      assert.deepEqual((JSON.parse(r.body) as ReadyBody).plugins.map((p) => [p.name, p.state]), [['linuxutil', 'starting']]);
      agent.child.kill('SIGTERM');
      const exit = await agent.waitExit(STOP_MS + 5000);
      assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM during start-up; stderr:\n${agent.stderr}`);
      const lines = assertJsonLogs(agent);
      const at = (msg: string): number => lines.findIndex((l) => l.msg === msg);
      assert.ok(at('shutting down') > at('starting retina-agent'), 'the signal was caught while starting');
      assert.equal(lines.find((l) => l.msg === 'stopped')?.['exitCode'], 0);
      assert.ok(!lines.some((l) => l.msg === 'plugin started' || l.msg === 'plugins started'), 'no plugin was started after the signal');
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  test('SIGTERM as soon as the HTTP server listens (winston, the platform and the plugins still loading): a clean stop with exit 0', async () => {
    const config = configFile('early-signal.yaml', agentYaml(['linuxutil']));
    await using agent = new AgentProcess({ args: ['--config', config], env: agentEnv() });
    await agent.listening();
    agent.child.kill('SIGTERM');
    const exit = await agent.waitExit(STOP_MS + 5000);
    assert.deepEqual(exit, { code: 0, signal: null }, `exit after SIGTERM right after listen; stderr:\n${agent.stderr}`);
    const lines = assertJsonLogs(agent);
    assert.ok(lines.some((l) => l.msg === 'shutting down' && l['signal'] === 'SIGTERM'), agent.stderr);
    assert.equal(lines.find((l) => l.msg === 'stopped')?.['exitCode'], 0, agent.stderr);
  });
});
