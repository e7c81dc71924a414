/**
 * The Linux agent's start-up snapshot entry (hack/bundle.mjs builds it into retina-agent.cjs and
 * `node --build-snapshot` into retina-agent.blob; the image runs `node <flags> --snapshot-blob
 * /app/retina-agent.blob -- <args>`). While the snapshot is built, what the agent runs before its HTTP
 * server listens is loaded and run once (the plugin list, a config parsed and validated, a line
 * logged, an exposition written), so the deserialised agent starts with that code loaded and compiled:
 * no module loading, no compile before its first /metrics answer (bench/agent/README.md). Everything
 * else is loaded after `listen`, as in the ES bundle (retina-agent.mjs, which stays the entry
 * everywhere else: Windows, `diagnose`, a checkout's bin/retina-agent).
 *
 * Nothing run here may hold a handle, read the clock or the environment for later, or load a native
 * module: that state would be the build machine's (src/metrics/registry.ts computes the process start
 * time at run time for that reason; src/ffi/koffi.ts loads koffi on first use; src/server takes
 * node:http when a server starts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { createLineLogger } from '../log/line/index.js';
import { createMetricsRegistry, defineMetric } from '../metrics/index.js';
import { currentOs, loadPlugins } from '../platform/index.js';
import { loadAgentConfig } from './agent-config.js';
import { exitWhenDone, snapshotBlob } from './command.js';
import { main } from './agent.js';

/**
 * Where retina-agent.cjs is: what `import.meta.url` reads in the snapshot's bundle (hack/bundle.mjs
 * defines it so), set by the bundle's first line and again after deserialisation.
 */
const location = globalThis as { __retinaBundleUrl?: string };

/** The work the agent does before it listens, once, with a sample config and nowhere to write. */
async function warmUp(): Promise<void> {
  // The built-ins node:http's server loads that a snapshot can hold (node:http itself and its parser
  // cannot): 3-4 ms less CPU in startHttpServer.
  for (const m of ['node:net', 'node:dns', 'node:cluster', 'node:child_process', 'node:_http_agent']) process.getBuiltinModule(m);
  const os = currentOs();
  const dir = mkdtempSync(join(tmpdir(), 'retina-snapshot-'));
  try {
    const file = join(dir, 'config.yaml');
    writeFileSync(file, 'apiServer:\n  host: 127.0.0.1\n  port: 10093\nlogLevel: info\nenabledPlugin: [linuxutil, packetforward, dns]\nmetricsIntervalDuration: 10s\n');
    await loadAgentConfig({ info: { os }, plugins: await loadPlugins(os) }, file, {});
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const nowhere = new Writable({ write: (_c, _e, done) => done() });
  const log = createLineLogger({ level: 'info', component: 'agent', stream: nowhere });
  log.child({ component: 'http' }).info('http server listening', { host: '127.0.0.1', port: 10093, scheme: 'http', auth: 'none' });
  // winston, which takes over right after `listen`: loaded, and one line written through it.
  log.handOff((await import('../log/index.js')).createLogger({ level: 'info', component: 'agent', stream: nowhere }));
  log.info('starting retina-agent', { version: '0.0.0', enabledPlugin: ['linuxutil'] });
  // No process metrics: prom-client's default metrics start an event-loop monitor (a handle).
  const metrics = createMetricsRegistry({ processMetrics: false });
  metrics.gauge(defineMetric('networkobservability_warm_up', 'gauge', 'warm-up', ['a'])).set({ a: 'b' }, 1);
  await metrics.exposeBody();
}

/** As agent-main.ts: `diagnose` or the agent, and an exit that does not wait for a stray handle. */
async function run(argv: readonly string[]): Promise<void> {
  exitWhenDone(argv[0] === 'diagnose' ? await (await import('./diagnose.js')).main(argv.slice(1), process.env) : await main(argv, process.env));
}

const { startupSnapshot } = process.getBuiltinModule('node:v8');
if (startupSnapshot.isBuildingSnapshot()) {
  void warmUp();
  startupSnapshot.setDeserializeMainFunction(() => {
    // The bundle's files (koffi's native module, the eBPF objects, vendor/) are beside the blob, wherever
    // it is now: the paths seen while the snapshot was built are the build machine's.
    const blob = snapshotBlob(process.execArgv);
    if (blob !== undefined) location.__retinaBundleUrl = pathToFileURL(join(dirname(resolve(blob)), 'retina-agent.cjs')).href;
    // `node --snapshot-blob B -- <args>`: the args follow node's own.
    void run(process.argv.slice(1));
  });
} else {
  void run(process.argv.slice(2));
}
