/**
 * Builds a running operator from a config and a REST client: informers (warm on every replica),
 * controllers (workers only on the leader), leader election, periodic resync, and the HTTP servers.
 * Split from operator.ts (flags and process signals) so tests can run several operators in one process.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { createEventRecorder, createInformerFactory, startLeaderElection, type LeaderElector, type RestClient } from '../k8s/index.js';
import type { Logger } from '../log/index.js';
import { createMetricsRegistry, type MetricsRegistry } from '../metrics/index.js';
import { defaultImages } from '../capture/index.js';
import { version } from './command.js';
import {
  createCaptureController, createContainerNetworkLogController, type CaptureController, type Controller,
  createMetricsConfigurationController, createRetinaEndpointController, createRetinaEndpointSliceController, installCrds, leaderStatus, parseAddr, reflectorEvents, reflectorRejected,
  type OperatorConfig, type RetinaEndpointController,
} from '../operator/index.js';
import { ResourceStack } from '../plugin/index.js';
import { loadKubeAuthorizer, startHttpServer, type HttpServer } from '../server/index.js';

export interface RunningOperator extends AsyncDisposable {
  readonly identity: string;
  readonly metrics: MetricsRegistry;
  readonly metricsServer: HttpServer;
  readonly probeServer: HttpServer;
  isLeader(): boolean;
  synced(): boolean;
  readonly retinaEndpoints: RetinaEndpointController | undefined;
  readonly captures: CaptureController | undefined;
}

export interface RunOperatorOptions {
  readonly config: OperatorConfig;
  readonly client: RestClient;
  readonly log: Logger;
  readonly crdDir: string;
  readonly identity?: string;
  /** The environment (RETINA_AGENT_IMAGE with captureDebug); process.env when absent. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** What makes /healthz answer 503 (a fatal error being handled, a shutdown under way); healthy when absent. */
  readonly health?: () => string | undefined;
}

export async function runOperator(o: RunOperatorOptions): Promise<RunningOperator> {
  const { config: cfg, client, log } = o;
  const identity = o.identity ?? `${hostname()}_${randomBytes(4).toString('hex')}`;
  const metrics = createMetricsRegistry();
  let elector: LeaderElector | undefined;
  let re: RetinaEndpointController | undefined;
  let captures: CaptureController | undefined;
  let synced = (): boolean => false;
  let metricsServer: HttpServer | undefined;
  let probeServer: HttpServer | undefined;

  const stack = await ResourceStack.build(async (s) => {
    if (cfg.installCRDs) {
      const names = await installCrds({ client, dir: o.crdDir, log, only: cfg.enableRetinaEndpoint ? undefined : ['MetricsConfiguration', 'Capture', 'ContainerNetworkLog'] });
      log.info('CRDs installed', { crds: names });
    }
    const relistCounter = metrics.counter(reflectorEvents);
    const rejectedCounter = metrics.counter(reflectorRejected);
    const informers = createInformerFactory({
      client, log: log.child({ component: 'reflector' }),
      onEvent: (event, resource) => relistCounter.inc({ resource, event }), onRejected: (reason, resource) => rejectedCounter.inc({ resource, reason }),
    });
    s.use(informers);
    const events = createEventRecorder({ client, component: 'retina-operator', host: identity, log });
    const images = defaultImages(version(), o.env ?? process.env, cfg.captureDebug);
    captures = createCaptureController({
      client, informers, metrics, events, log,
      linuxImage: (cfg.captureDebug ? images.linuxImage : cfg.captureImage) || images.linuxImage,
      windowsImage: (cfg.captureDebug ? images.windowsImage : cfg.captureWindowsImage) || images.windowsImage,
      hostPathBaseDir: cfg.captureHostPathBaseDir, jobNumLimit: cfg.captureJobNumLimit, deadlineSlackMs: cfg.captureDeadlineSlackMs,
      podClusterRole: cfg.captureServiceAccountClusterRole,
    });
    const controllers: (Controller & { enqueueAll(): void })[] = [
      createMetricsConfigurationController({ client, informers, metrics, events, log }), captures,
      createContainerNetworkLogController({ client, informers, metrics, events, log }),
    ];
    if (cfg.enableRetinaEndpoint && cfg.remoteContext) {
      re = createRetinaEndpointController({
        client, informers, labelAllowlist: cfg.retinaEndpointLabels, annotationAllowlist: cfg.retinaEndpointAnnotations,
        workers: cfg.workers, qps: cfg.queueQps, burst: cfg.queueBurst, metrics, events, log,
      });
      controllers.push(re);
      if (cfg.retinaEndpointSlices) {
        controllers.push(createRetinaEndpointSliceController({
          client, informers, pods: re.pods, maxSize: cfg.retinaEndpointSliceMaxSize,
          workers: Math.max(1, Math.min(cfg.workers, 4)), qps: cfg.queueQps, burst: cfg.queueBurst, metrics, log,
        }));
      }
    } else log.info('RetinaEndpoint conversion is off (needs remoteContext and enableRetinaEndpoint)');
    s.defer(() => controllers.forEach((c) => c.shutdown()));
    informers.start();
    synced = () => informers.stats().every((x) => x.synced);

    const leaderGauge = metrics.gauge(leaderStatus);
    const lead = (signal: AbortSignal): void => {
      leaderGauge.set({ name: cfg.leaderElectionId }, 1);
      const resync = (): void => controllers.forEach((c) => c.enqueueAll());
      resync();
      const t = setInterval(resync, cfg.resyncPeriodMs);
      t.unref();
      const running = Promise.all(controllers.map((c) => c.run(signal)));
      signal.addEventListener('abort', () => {
        clearInterval(t);
        leaderGauge.set({ name: cfg.leaderElectionId }, 0);
      }, { once: true });
      workers.push(running);
    };
    const workers: Promise<unknown>[] = [];
    // Workers stop before the lease is released (the stack releases in reverse order).
    s.defer(() => Promise.all(workers));
    if (cfg.enableLeaderElection) {
      elector = s.use(startLeaderElection({
        client, namespace: cfg.leaderElectionNamespace, name: cfg.leaderElectionId, identity,
        leaseDurationMs: cfg.leaseDurationMs, renewDeadlineMs: cfg.renewDeadlineMs, retryPeriodMs: cfg.retryPeriodMs,
        log, onStartedLeading: lead, onNewLeader: (id) => log.info('leader', { identity: id }),
      }));
    } else {
      const always = new AbortController();
      s.defer(() => always.abort());
      lead(always.signal);
    }
    const readiness = {
      ready: () => synced(),
      status: () => [{ name: 'informers', state: synced() ? 'running' : 'starting' }, { name: 'leader', state: elector ? (elector.isLeader() ? 'leading' : 'standby') : 'leading' }],
    };
    const m = parseAddr(cfg.metricsAddr);
    const p = parseAddr(cfg.probeAddr);
    const sec = cfg.metricsSecurity;
    const auth = sec.auth.enabled ? await loadKubeAuthorizer({ client, log: log.child({ component: 'metrics-auth' }), ...sec.auth }) : undefined;
    const health = o.health ? { health: o.health } : {};
    metricsServer = s.use(await startHttpServer({
      ...m, log: log.child({ component: 'http-metrics' }), expose: () => metrics.exposeBody(), readiness, ...health, ...(sec.tls ? { tls: sec.tls } : {}), ...(auth ? { auth } : {}),
    }));
    probeServer = s.use(await startHttpServer({ ...p, log: log.child({ component: 'http-probes' }), expose: () => metrics.exposeBody(), readiness, ...health }));
  });

  return {
    identity,
    metrics,
    metricsServer: metricsServer as unknown as HttpServer,
    probeServer: probeServer as unknown as HttpServer,
    isLeader: () => (elector ? elector.isLeader() : true),
    synced: () => synced(),
    get retinaEndpoints() {
      return re;
    },
    get captures() {
      return captures;
    },
    [Symbol.asyncDispose]: () => stack[Symbol.asyncDispose](),
  };
}
