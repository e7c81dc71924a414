/**
 * Composition root of `retina-agent`: reads flags and config, picks the platform's plugins, and wires
 * metrics, the plugin manager and the HTTP server together. Nothing else builds the graph.
 */
import {
  agentConfig,
  agentKeys,
  collectSpecs,
  loadValues,
  readConfigFile,
  type ConfigSpec,
} from '../config/index.js';
import { discardFlows } from '../flow/index.js';
import { createLogger, errorFields, type Logger } from '../log/index.js';
import { catalog, createMetricsRegistry } from '../metrics/index.js';
import { createPluginManager, selectPlatform } from '../platform/index.js';
import { startHttpServer } from '../server/index.js';
import { catchSignals, configErrorExit, readCommandLine, version, within } from './command.js';

const USAGE = `usage: retina-agent [--config FILE] [--kubeconfig FILE]

Runs the retina-ts node agent: node network metrics on http://<apiServer.host>:<apiServer.port>/metrics.
Without --config the defaults apply; every key can be overridden with RETINA_<KEY> (see README).`;

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const flags = readCommandLine('retina-agent', USAGE, argv, ['config', 'kubeconfig']);
  if (typeof flags === 'number') return flags;

  const platform = await selectPlatform();
  const names = platform.plugins.map((p) => p.name);
  const keys = agentKeys({ os: platform.info.os, names, defaults: platform.plugins.filter((p) => p.defaultEnabled).map((p) => p.name) });
  let agent;
  let values;
  const configPath = flags.values['config'] as string | undefined;
  try {
    const specs = collectSpecs(keys, ...platform.plugins.map((p) => p.config as ConfigSpec<object>));
    const fileText = configPath ? await readConfigFile(configPath) : undefined;
    values = loadValues({ fileText, filePath: configPath, env, specs });
    agent = agentConfig(keys, values);
  } catch (e) {
    return configErrorExit('retina-agent', e);
  }

  const log = createLogger({ level: agent.logLevel, component: 'agent' });
  const shutdown = catchSignals(log);
  log.info('starting retina-agent', {
    version: version(), node: process.version, os: platform.info.os, kernel: platform.info.kernelRelease,
    btf: platform.info.btf, tc: platform.info.tc, tcx: platform.info.tcx, ringBuffer: platform.info.ringBuffer,
    capabilities: platform.info.capabilities, config: configPath ?? '(defaults)', enabledPlugin: agent.enabledPlugin,
  });
  if (values.unknownKeys.length) log.warn('configuration keys not used by this agent', { keys: values.unknownKeys });
  // The event-loop delay monitor samples once per metrics interval: the agent wakes for nothing else when idle.
  const metrics = createMetricsRegistry({ eventLoopSampleMs: agent.metricsIntervalMs });
  // The Kubernetes side (and its modules) loads only when there is an API to talk to.
  const kubeconfig = (flags.values['kubeconfig'] as string | undefined) || env['KUBECONFIG'] || undefined;
  const k8s = kubeconfig || env['KUBERNETES_SERVICE_HOST']
    ? await (await import('./agent-k8s.js')).startAgentKubernetes({ kubeconfig, env, agent, log, metrics })
    : undefined;
  if (!k8s) log.info('no Kubernetes API configured (--kubeconfig, KUBECONFIG or in-cluster); running standalone');
  // Pod level: enricher -> Metrics Module, and the IPs of interest (pod-level.ts).
  const podLevel = agent.enablePodLevel ? await (await import('./pod-level.js')).startPodLevel({ agent, metrics, log, k8s }) : undefined;

  installSafetyNets(log, () => metrics.counter(catalog.pluginManagerFailedToReconcile).inc({ reason: 'uncaught' }));
  const enabled = platform.plugins.filter((p) => agent.enabledPlugin.includes(p.name));
  const manager = createPluginManager({
    plugins: enabled, values, agent, info: platform.info, log, metrics, flows: podLevel?.flows ?? discardFlows, ...(podLevel ? { interest: podLevel.interest } : {}),
  });

  let server;
  try {
    server = await startHttpServer({ host: agent.apiServerHost, port: agent.apiServerPort, log: log.child({ component: 'http' }), expose: () => metrics.expose(), readiness: manager });
  } catch (e) {
    log.error('cannot start the HTTP server', { error: errorFields(e as Error), host: agent.apiServerHost, port: agent.apiServerPort });
    return 1;
  }
  const http = server;

  const done = shutdown.run(async () => {
    let code = 0;
    try {
      if ((await within(manager[Symbol.asyncDispose](), agent.shutdownTimeoutMs)) === 'timeout') {
        log.error('plugins did not stop in time', { timeoutMs: agent.shutdownTimeoutMs });
        code = 1;
      }
    } catch (e) {
      log.error('plugins stopped with errors', { error: errorFields(e as Error) });
      code = 1;
    }
    await Promise.resolve(podLevel?.[Symbol.asyncDispose]()).catch((e: unknown) => log.error('the pod-level pipeline stopped with errors', { error: errorFields(e as Error) }));
    await Promise.resolve(k8s?.[Symbol.asyncDispose]()).catch((e: unknown) => log.error('Kubernetes watchers stopped with errors', { error: errorFields(e as Error) }));
    await http[Symbol.asyncDispose]();
    return code;
  });

  // Stopped during start-up: nothing is attached yet, and nothing will be.
  if (shutdown.signal === undefined) {
    await manager.start();
    const st = manager.status();
    log.info('plugins started', { running: st.filter((s) => s.state === 'running' || s.state === 'degraded').map((s) => s.name), failed: st.filter((s) => s.state === 'failed').map((s) => s.name) });
  }
  return done;
}

/** A bug in one component must not take the agent down: log it, count it, keep serving. */
function installSafetyNets(log: Logger, count: () => void): void {
  process.on('uncaughtException', (e) => {
    count();
    log.error('uncaught exception', { error: errorFields(e) });
  });
  process.on('unhandledRejection', (e) => {
    count();
    log.error('unhandled rejection', { error: e instanceof Error ? errorFields(e) : String(e) });
  });
}
