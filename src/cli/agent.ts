/**
 * Composition root of `retina-agent`: reads flags and config, picks the platform's plugins, and wires
 * metrics, the plugin manager and the HTTP server together. Nothing else builds the graph. Each part
 * is built once, from the parts started before it (the watches, then the flow consumers, then the
 * pipeline, then the plugins), and goes on one ResourceStack, released once in reverse.
 */
import { hostname } from 'node:os';
import { configWarnings, flowLogsWanted } from '../config/index.js';
// The line logger, not winston's (../log/index.js, loaded once the HTTP server listens): see main().
import { createLineLogger, errorFields } from '../log/line/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import { createPluginManager, currentOs, loadPlugins, selectPlatform, type Platform, type PluginManager, type PluginStatus } from '../platform/index.js';
import { ResourceStack } from '../plugin/index.js';
import { loadKubeAuthorizer, startHttpServer, type HttpServer, type ReadinessSource, type RequestAuthorizer } from '../server/index.js';
import { loadAgentConfig } from './agent-config.js';
import { exposeAndTrim, releaseColdPagesLater } from './agent-trim.js';
import { catchSignals, configErrorExit, exitOnFatal, packageFile, readCommandLine, version, within } from './command.js';
import { compactHeapWhenGrown } from './heap-compaction.js';

const USAGE = `usage: retina-agent [--config FILE] [--kubeconfig FILE]
       retina-agent diagnose --help

Runs the retina-ts node agent: node network metrics on http://<apiServer.host>:<apiServer.port>/metrics.
Without --config the defaults apply; every key can be overridden with RETINA_<KEY> (see README).`;

const PIPELINE_STOPPED = 'the flow pipeline and its Kubernetes watches stopped with errors';

/**
 * Serve early, load late. What the HTTP server needs comes first: the flags, the config (validated in
 * full against the OS's plugin list, so a bad config is refused before anything serves), a line
 * logger, the signal and fatal-error handlers, and the metrics registry; then the server listens
 * and answers /metrics with the registry as it is (the process metrics, then each family as its
 * writer starts), /healthz, and /readyz (503 until every plugin runs). Only then come winston, the
 * host's detection (kernel, BTF, tc), the Kubernetes client, the flow pipeline and the plugins
 * (dynamic imports: in the bundle they are chunks read after `listen`), with a turn of the event loop
 * between the pieces so that a request that came meanwhile is answered first. With metricsAuth the
 * server waits for the API server's client (tokens cannot be reviewed without it), as before.
 */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const flags = readCommandLine('retina-agent', USAGE, argv, ['config', 'kubeconfig']);
  if (typeof flags === 'number') return flags;

  const os = currentOs();
  let loaded;
  const configPath = flags.values['config'] as string | undefined;
  try {
    loaded = await loadAgentConfig({ info: { os }, plugins: await loadPlugins(os) }, configPath, env);
  } catch (e) {
    return configErrorExit('retina-agent', e);
  }
  const { agent, keys, values } = loaded;

  // Lines as winston writes them; winston takes over once loaded (handOff below).
  const log = createLineLogger({ level: agent.logLevel, component: 'agent' });
  const shutdown = catchSignals(log);
  const fatal = exitOnFatal(log);
  // The event-loop delay monitor samples once per metrics interval: the agent wakes for nothing else when idle.
  const metrics = createMetricsRegistry({ eventLoopSampleMs: agent.metricsIntervalMs });
  // Until the plugin manager exists, every enabled plugin is `starting` and the agent is not ready.
  const since = new Date().toISOString();
  let readiness: ReadinessSource<PluginStatus> = {
    ready: () => false,
    status: () => agent.enabledPlugin.map((name) => ({ name, state: 'starting' as const, since, failures: 0 })),
  };
  let expose = (): ReturnType<MetricsRegistry['exposeBody']> => metrics.exposeBody();
  // Liveness: the process answers, and is not on its way out (see README, /healthz).
  const health = (): string | undefined => (fatal.error !== undefined ? `exiting after ${fatal.error}` : shutdown.signal !== undefined ? `shutting down (${shutdown.signal})` : undefined);

  // Everything started from here on goes on one stack, in start order, and is released once, in
  // reverse (timers, plugins, pipeline, flow consumers, watches, API client, HTTP server): on a
  // signal, a fatal error, or a start-up that fails. Only the plugins' stop sets the exit status.
  const stack = new ResourceStack();
  let code = 0;
  const stop = async (): Promise<number> => {
    await stack[Symbol.asyncDispose]();
    return code;
  };
  fatal.onExit(stop);
  /** Releases `r` with the stack; a failure to release is logged as `problem`, and the rest goes on. */
  const own = <T extends AsyncDisposable | Disposable>(r: T, problem: string): T => {
    stack.defer(async () => {
      try {
        await (Symbol.asyncDispose in r ? (r as AsyncDisposable)[Symbol.asyncDispose]() : (r as Disposable)[Symbol.dispose]());
      } catch (e) {
        log.error(problem, { error: errorFields(e as Error) });
      }
    });
    return r;
  };
  const serve = async (auth: RequestAuthorizer | undefined): Promise<HttpServer | undefined> => {
    try {
      return stack.use(await startHttpServer({
        host: agent.apiServerHost, port: agent.apiServerPort, log: log.child({ component: 'http' }), expose: () => expose(), health,
        readiness: { ready: () => readiness.ready(), status: () => readiness.status() },
        ...(agent.metricsSecurity.tls ? { tls: agent.metricsSecurity.tls } : {}), ...(auth ? { auth } : {}),
      }));
    } catch (e) {
      log.error('cannot start the HTTP server', { error: errorFields(e as Error), host: agent.apiServerHost, port: agent.apiServerPort });
      return undefined;
    }
  };

  /** Starts everything but the plugins (their manager is built); an exit status when the agent cannot start. */
  const start = async (): Promise<{ server: HttpServer; plugins: PluginManager; platform: Platform } | number> => {
    // metricsAuth fails closed: without an API server to review tokens, /metrics is not served at all.
    let server = agent.metricsSecurity.auth.enabled ? undefined : await serve(undefined);
    if (!server && !agent.metricsSecurity.auth.enabled) return 1;
    /**
     * Between two pieces of start-up work that hold the event loop: a turn of it (connections that came
     * are accepted, their requests read) and, when a request waits for its answer, that answer.
     */
    const breathe = async (): Promise<void> => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      await server?.quiet(1000);
    };
    await breathe();

    const [{ createLogger }, platform] = await Promise.all([import('../log/index.js'), selectPlatform(os)]);
    log.handOff(createLogger({ level: agent.logLevel, component: 'agent', stream: log.stream }));
    expose = exposeAndTrim(metrics, platform.releaseFreeMemory);
    log.info('starting retina-agent', {
      version: version(), node: process.version, os: platform.info.os, kernel: platform.info.kernelRelease,
      btf: platform.info.btf, tc: platform.info.tc, tcx: platform.info.tcx, ringBuffer: platform.info.ringBuffer,
      capabilities: platform.info.capabilities, config: configPath ?? '(defaults)', enabledPlugin: agent.enabledPlugin,
    });
    for (const u of values.unknownKeys) {
      log.warn('configuration key not used by this agent', { key: u.key, source: u.source, ...(u.didYouMean === undefined ? {} : { didYouMean: u.didYouMean }) });
    }
    const podLevelOnlyPlugins = platform.plugins.filter((p) => p.podLevelOnly).map((p) => p.name);
    for (const w of configWarnings({ agent, keys, values, podLevelOnlyPlugins })) log.warn('contradictory configuration', { keys: w.keys, problem: w.problem });
    await breathe();
    // The API server's client (agent-k8s.ts), loaded only when there is an API to talk to.
    const kubeconfig = (flags.values['kubeconfig'] as string | undefined) || env['KUBECONFIG'] || undefined;
    const k8s = kubeconfig || env['KUBERNETES_SERVICE_HOST']
      ? await (await import('./agent-k8s.js')).connectKubernetes({ kubeconfig, env, agent, log })
      : undefined;
    if (k8s) stack.use(k8s);
    else log.info('no Kubernetes API configured (--kubeconfig, KUBECONFIG or in-cluster); running standalone');
    if (!server && !k8s) log.error('metricsAuth.enabled is true but there is no usable Kubernetes API to review tokens with (--kubeconfig, KUBECONFIG or in-cluster); refusing to start');
    else if (!server && k8s) server = await serve(await loadKubeAuthorizer({ client: k8s.client, log: log.child({ component: 'metrics-auth' }), ...agent.metricsSecurity.auth }));
    if (!server) return 1;

    // The node's watches first (src/pipeline: one informer factory, one watch per kind), so that the
    // enricher's IP cache, Hubble's peers and the ContainerNetworkLog selection are built with them.
    const { startNodeWatches, startNodePipeline } = await import('../pipeline/index.js');
    const watches = k8s ? own(await startNodeWatches({ client: k8s.client, nodeName: k8s.nodeName, agent, metrics, log }), PIPELINE_STOPPED) : undefined;
    // Then the consumers of enriched flows; Hubble's .proto files are parsed once (on first use) for both.
    const hubbleProtos = agent.hubble.enabled || flowLogsWanted(agent.flowLogs)
      ? await import('../flow/hubble/index.js').then((m) => m.hubbleProtoFiles(packageFile('proto/hubble'), agent.hubble.enabled ? m.HUBBLE_PROTO_FILES : m.FLOW_PROTO_FILES))
      : undefined;
    // The flow-log exporters' node name; with hubble.history.fromExport, GetFlows reads hubble.export.static's files back.
    const flowLogNode = k8s?.nodeName ?? env['NODE_NAME'] ?? hostname();
    const exportStatic = agent.hubble.enabled && agent.hubble.historyFromExport ? agent.flowLogs.static : undefined;
    const history = exportStatic && hubbleProtos
      ? (await import('../export/index.js')).createExportHistory({ config: exportStatic, nodeName: flowLogNode, protos: (await import('../flow/hubble/index.js')).loadFlowProtos(hubbleProtos) })
      : undefined;
    const hubble = agent.hubble.enabled && hubbleProtos
      ? own((await import('../server/hubble/index.js')).createHubbleService({
        config: agent.hubble, metrics, log, nodeName: k8s?.nodeName, nodes: watches?.nodes(), version: version(), protoFiles: hubbleProtos,
        history,
      }), 'the Hubble server stopped with errors')
      : undefined;
    // Stored flow logs (src/export: hubble.export static/dynamic and flowLogs), loaded only when configured.
    const flowLogs = hubbleProtos && flowLogsWanted(agent.flowLogs)
      ? own(await (await import('../export/index.js')).startFlowLogs({
        config: agent.flowLogs, otlp: agent.flowLogsOtlp, nodeName: flowLogNode, version: version(),
        protoFiles: hubbleProtos, protoDir: packageFile('proto'), informers: watches?.factory, metrics, log,
      }), 'the flow-log export stopped with errors')
      : undefined;
    // Cilium's hubble_* metrics (hubble.metrics.enabled), served on their own port.
    const hubbleMetrics = agent.hubbleMetrics.metrics.length || agent.hubbleMetrics.refused.length
      ? await (await import('./agent-hubble-metrics.js')).startHubbleMetrics({ agent, metrics, log, nodeName: k8s?.nodeName ?? env['NODE_NAME'] })
      : undefined;
    if (hubbleMetrics) own(hubbleMetrics, 'the hubble metrics server stopped with errors');
    await breathe();
    // The flow pipeline: plugins -> enricher -> Metrics Module (enablePodLevel), the Hubble ring, the Hubble metrics, the flow logs.
    const pipeline = own(await startNodePipeline({
      agent, metrics, log, watches, consumers: [
        ...(hubble ? [{ name: 'hubble', consumer: hubble.ring }] : []),
        ...(hubbleMetrics ? [{ name: 'hubble_metrics', consumer: hubbleMetrics.metrics, forget: hubbleMetrics.metrics }] : []),
        ...(flowLogs?.consumers ?? []),
      ],
    }), PIPELINE_STOPPED);
    try {
      await hubble?.listen();
    } catch (e) {
      log.error('cannot start the Hubble server', { error: errorFields(e as Error), listenAddress: `${agent.hubble.listen.host}:${agent.hubble.listen.port}`, socketPath: agent.hubble.socketPath });
      return 1;
    }

    const enabled = platform.plugins.filter((p) => agent.enabledPlugin.includes(p.name));
    const plugins = createPluginManager({ plugins: enabled, values, agent, info: platform.info, log, metrics, flows: pipeline.flows, interest: pipeline.interest });
    stack.defer(async () => {
      try {
        if ((await within(plugins[Symbol.asyncDispose](), agent.shutdownTimeoutMs)) === 'timeout') {
          log.error('plugins did not stop in time', { timeoutMs: agent.shutdownTimeoutMs });
          code = 1;
        }
      } catch (e) {
        log.error('plugins stopped with errors', { error: errorFields(e as Error) });
        code = 1;
      }
    });
    readiness = plugins;
    return { server, plugins, platform };
  };

  const started = await start().catch(async (e: unknown) => {
    await stop();
    throw e;
  });
  if (typeof started === 'number') {
    await stop();
    return started;
  }
  const { server, plugins, platform } = started;
  const done = shutdown.run(stop);
  // Stopped during start-up: nothing is attached yet, and nothing will be.
  if (shutdown.signal === undefined) {
    // A scrape or probe that comes while the plugins attach is answered between two plugins' starts
    // (at most 1 s later): /metrics answers from the first moment, its series filling in as plugins start.
    await plugins.start(() => server.quiet(1000));
    const st = plugins.status();
    log.info('plugins started', { running: st.filter((s) => s.state === 'running' || s.state === 'degraded').map((s) => s.name), failed: st.filter((s) => s.state === 'failed').map((s) => s.name) });
    stack.use(releaseColdPagesLater(platform.releaseColdPages, log));
    stack.use(compactHeapWhenGrown(log));
  }
  return done;
}
