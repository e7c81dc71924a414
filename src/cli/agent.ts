/**
 * Composition root of `retina-agent`: reads flags and config, picks the platform's plugins, and wires
 * metrics, the plugin manager and the HTTP server together. Nothing else builds the graph.
 */
import { hostname } from 'node:os';
import { configWarnings, flowLogsWanted, type AgentConfig } from '../config/index.js';
import type { ContainerNetworkLogSelection, FlowLogs } from '../export/index.js';
import type { HubbleProtoFiles } from '../flow/hubble/index.js';
// The line logger, not winston's (../log/index.js, loaded once the HTTP server listens): see main().
import { createLineLogger, errorFields, type Logger } from '../log/line/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import { createPluginManager, currentOs, loadPlugins, selectPlatform, type PluginStatus } from '../platform/index.js';
import { loadKubeAuthorizer, startHttpServer, type HttpServer, type ReadinessSource, type RequestAuthorizer } from '../server/index.js';
import { loadAgentConfig } from './agent-config.js';
import { exposeAndTrim, releaseColdPagesLater } from './agent-trim.js';
import { catchSignals, configErrorExit, exitOnFatal, packageFile, readCommandLine, version, within } from './command.js';
import { compactHeapWhenGrown } from './heap-compaction.js';

const USAGE = `usage: retina-agent [--config FILE] [--kubeconfig FILE]
       retina-agent diagnose --help

Runs the retina-ts node agent: node network metrics on http://<apiServer.host>:<apiServer.port>/metrics.
Without --config the defaults apply; every key can be overridden with RETINA_<KEY> (see README).`;

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
  const serve = async (auth: RequestAuthorizer | undefined): Promise<HttpServer | undefined> => {
    try {
      return await startHttpServer({
        host: agent.apiServerHost, port: agent.apiServerPort, log: log.child({ component: 'http' }), expose: () => expose(), health,
        readiness: { ready: () => readiness.ready(), status: () => readiness.status() },
        ...(agent.metricsSecurity.tls ? { tls: agent.metricsSecurity.tls } : {}), ...(auth ? { auth } : {}),
      });
    } catch (e) {
      log.error('cannot start the HTTP server', { error: errorFields(e as Error), host: agent.apiServerHost, port: agent.apiServerPort });
      return undefined;
    }
  };
  // metricsAuth fails closed: without an API server to review tokens, /metrics is not served at all.
  let http: HttpServer | undefined;
  if (!agent.metricsSecurity.auth.enabled) {
    http = await serve(undefined);
    if (!http) return 1;
  }
  /**
   * Between two pieces of start-up work that hold the event loop: a turn of it (connections that came
   * are accepted, their requests read) and, when a request waits for its answer, that answer.
   */
  const breathe = async (): Promise<void> => {
    await new Promise<void>((resolve) => setImmediate(resolve));
    await http?.quiet(1000);
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
  if (!k8s) log.info('no Kubernetes API configured (--kubeconfig, KUBECONFIG or in-cluster); running standalone');
  let server: HttpServer;
  if (http) server = http;
  else {
    if (!k8s) {
      log.error('metricsAuth.enabled is true but there is no usable Kubernetes API to review tokens with (--kubeconfig, KUBECONFIG or in-cluster); refusing to start');
      return 1;
    }
    const authorized = await serve(await loadKubeAuthorizer({ client: k8s.client, log: log.child({ component: 'metrics-auth' }), ...agent.metricsSecurity.auth }));
    if (!authorized) {
      k8s[Symbol.dispose]();
      return 1;
    }
    server = http = authorized;
  }
  // Hubble's .proto files, parsed once (on first use) for both the Hubble server and the flow-log export.
  const hubbleProtos = agent.hubble.enabled || flowLogsWanted(agent.flowLogs)
    ? await import('../flow/hubble/index.js').then((m) => m.hubbleProtoFiles(packageFile('proto/hubble'), agent.hubble.enabled ? m.HUBBLE_PROTO_FILES : m.FLOW_PROTO_FILES))
    : undefined;
  // The flow pipeline (src/pipeline): plugins -> enricher -> Metrics Module (enablePodLevel) and the
  // Hubble ring (hubble.enabled), with the node's one informer factory.
  const hubble = agent.hubble.enabled && hubbleProtos
    ? (await import('../server/hubble/index.js')).createHubbleService({ config: agent.hubble, metrics, log, nodeName: k8s?.nodeName, version: version(), protoFiles: hubbleProtos })
    : undefined;
  // Stored flow logs (src/export): hubble.export static/dynamic and flowLogs, loaded only when configured.
  const flowLogs = hubbleProtos ? await startFlowLogExport(agent, k8s?.nodeName ?? env['NODE_NAME'] ?? hostname(), k8s !== undefined, hubbleProtos, metrics, log) : undefined;
  await breathe();
  const { startNodePipeline } = await import('../pipeline/index.js');
  const pipeline = await startNodePipeline({
    agent, metrics, log, k8s, consumers: [...(hubble ? [{ name: 'hubble', consumer: hubble.ring }] : []), ...(flowLogs?.consumers ?? [])],
  });
  // ContainerNetworkLogs are read through the node's one informer factory (one more watch, counted).
  if (flowLogs?.cnl && pipeline.informers) flowLogs.cnl.watch(pipeline.informers);

  const enabled = platform.plugins.filter((p) => agent.enabledPlugin.includes(p.name));
  const manager = createPluginManager({
    plugins: enabled, values, agent, info: platform.info, log, metrics, flows: pipeline.flows, interest: pipeline.interest,
  });
  readiness = manager;
  if (hubble) {
    try {
      await hubble.listen(pipeline.nodes());
    } catch (e) {
      log.error('cannot start the Hubble server', { error: errorFields(e as Error), listenAddress: `${agent.hubble.listen.host}:${agent.hubble.listen.port}`, socketPath: agent.hubble.socketPath });
      await Promise.resolve(hubble[Symbol.asyncDispose]()).catch((e: unknown) => log.error('the Hubble server stopped with errors', { error: errorFields(e as Error) }));
      await Promise.resolve(flowLogs?.[Symbol.asyncDispose]()).catch(() => undefined);
      await Promise.resolve(pipeline[Symbol.asyncDispose]()).catch(() => undefined);
      k8s?.[Symbol.dispose]();
      await server[Symbol.asyncDispose]();
      return 1;
    }
  }

  let coldPages: Disposable | undefined;
  let heap: Disposable | undefined;
  const stop = async (): Promise<number> => {
    coldPages?.[Symbol.dispose]();
    heap?.[Symbol.dispose]();
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
    await Promise.resolve(hubble?.[Symbol.asyncDispose]()).catch((e: unknown) => log.error('the Hubble server stopped with errors', { error: errorFields(e as Error) }));
    // After the plugins: no flow arrives any more; what is queued is written out.
    await Promise.resolve(flowLogs?.[Symbol.asyncDispose]()).catch((e: unknown) => log.error('the flow-log export stopped with errors', { error: errorFields(e as Error) }));
    await Promise.resolve(pipeline[Symbol.asyncDispose]()).catch((e: unknown) => log.error('the flow pipeline and its Kubernetes watches stopped with errors', { error: errorFields(e as Error) }));
    k8s?.[Symbol.dispose]();
    await server[Symbol.asyncDispose]();
    return code;
  };
  fatal.onExit(stop);
  const done = shutdown.run(stop);

  // Stopped during start-up: nothing is attached yet, and nothing will be.
  if (shutdown.signal === undefined) {
    // A scrape or probe that comes while the plugins attach is answered between two plugins' starts
    // (at most 1 s later): /metrics answers from the first moment, its series filling in as plugins start.
    await manager.start(() => server.quiet(1000));
    const st = manager.status();
    log.info('plugins started', { running: st.filter((s) => s.state === 'running' || s.state === 'degraded').map((s) => s.name), failed: st.filter((s) => s.state === 'failed').map((s) => s.name) });
    coldPages = releaseColdPagesLater(platform.releaseColdPages, log);
    heap = compactHeapWhenGrown(log);
  }
  return done;
}

/**
 * The flow-log exporters the config asks for (none: undefined, and src/export is not loaded). With
 * `flowLogs.enabled` and an API server, the ContainerNetworkLog selection (src/export/cnl.ts) is
 * built here and starts watching once the pipeline's informer factory exists (`watch` below).
 */
async function startFlowLogExport(agent: AgentConfig, nodeName: string, withK8s: boolean, hubbleProtos: HubbleProtoFiles, metrics: MetricsRegistry, log: Logger): Promise<(FlowLogs & { readonly cnl: ContainerNetworkLogSelection | undefined }) | undefined> {
  if (!flowLogsWanted(agent.flowLogs)) return undefined;
  const [{ startFlowLogs, createContainerNetworkLogSelection }, { loadFlowProtos }] = await Promise.all([import('../export/index.js'), import('../flow/hubble/index.js')]);
  const protos = loadFlowProtos(hubbleProtos);
  const cnl = agent.flowLogs.cnl && withK8s ? createContainerNetworkLogSelection({ log, enums: protos.enums }) : undefined;
  // flowLogs.otlp.endpoint: the ContainerNetworkLog exporter's records also go to an OTLP collector
  // (src/export/otlp, loaded only then), beside its file.
  const otlp = cnl && agent.flowLogsOtlp.endpoint !== ''
    ? [(await import('../export/otlp/index.js')).createOtlpFlowSink({ config: agent.flowLogsOtlp, nodeName, version: version(), protoDir: packageFile('proto'), metrics, log })]
    : [];
  const started = startFlowLogs({ config: agent.flowLogs, nodeName, protos, metrics, log, containerNetworkLogs: cnl, extraSinks: otlp });
  return {
    cnl,
    consumers: started.consumers,
    async [Symbol.asyncDispose]() {
      cnl?.[Symbol.dispose]();
      await started[Symbol.asyncDispose]();
    },
  };
}
