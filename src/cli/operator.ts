/**
 * Composition root of `retina-operator`: flags, config, credentials (through client-node's KubeConfig
 * with a kubeconfig, else in-cluster), then runOperator(); SIGTERM stops workers, releases the
 * leader Lease and exits.
 */
import { collectSpecs, loadValues, readConfigFile, type ConfigSpec } from '../config/index.js';
import { createRestClient, loadRestConfig } from '../k8s/index.js';
import { createLogger, errorFields } from '../log/index.js';
import { operatorConfig, operatorKeys } from '../operator/index.js';
import { catchSignals, configErrorExit, exitOnFatal, packageFile, readCommandLine, version, within } from './command.js';
import { runOperator } from './operator-run.js';

const USAGE = `usage: retina-operator [--config FILE] [--kubeconfig FILE] [--metrics-addr :8080] [--probe-addr :8081] [--enable-leader-election=false]

Runs the retina-ts operator: RetinaEndpoints from Pods (remote context), MetricsConfiguration validation,
Captures (one Job per target node),
CRD installation. Every config key can be overridden with RETINA_<KEY> (see README).`;

export const CRD_DIR = packageFile('charts/retina/crds');

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const flags = readCommandLine('retina-operator', USAGE, argv, ['config', 'kubeconfig', 'metrics-addr', 'probe-addr', 'enable-leader-election']);
  if (typeof flags === 'number') return flags;
  const keys = operatorKeys();
  const configPath = flags.values['config'] as string | undefined;
  let cfg;
  try {
    const fileText = configPath ? await readConfigFile(configPath) : undefined;
    // Retina's flags win over the file and env, as in Retina.
    const flagEnv: Record<string, string | undefined> = { ...env };
    if (flags.values['metrics-addr']) flagEnv['RETINA_METRICSADDR'] = flags.values['metrics-addr'] as string;
    if (flags.values['probe-addr']) flagEnv['RETINA_PROBEADDR'] = flags.values['probe-addr'] as string;
    if (flags.values['enable-leader-election'] !== undefined) flagEnv['RETINA_ENABLELEADERELECTION'] = String(flags.values['enable-leader-election']);
    cfg = operatorConfig(keys, loadValues({ fileText, filePath: configPath, env: flagEnv, specs: collectSpecs(keys as ConfigSpec<object>) }));
  } catch (e) {
    return configErrorExit('retina-operator', e);
  }
  const log = createLogger({ level: cfg.logLevel, component: 'operator' });
  const shutdown = catchSignals(log);
  const fatal = exitOnFatal(log);
  let client;
  try {
    const rc = await loadRestConfig({ kubeconfig: flags.values['kubeconfig'] as string | undefined, env, prefer: 'client-node' });
    client = createRestClient(rc, { userAgent: `retina-operator/${version()}` });
    log.info('starting retina-operator', { version: version(), node: process.version, api: rc.source, remoteContext: cfg.remoteContext, leaderElection: cfg.enableLeaderElection });
  } catch (e) {
    log.error('no Kubernetes API to talk to', { error: errorFields(e as Error) });
    return 1;
  }
  let op;
  try {
    // /healthz answers 503 with the reason while a fatal error or a signal is being handled, as the agent's does.
    const health = (): string | undefined => (fatal.error !== undefined ? `exiting after ${fatal.error}` : shutdown.signal !== undefined ? `shutting down (${shutdown.signal})` : undefined);
    op = await runOperator({ config: cfg, client, log, crdDir: CRD_DIR, health });
  } catch (e) {
    log.error('cannot start', { error: errorFields(e as Error) });
    client.close();
    return 1;
  }
  const running = op;
  const stop = async (): Promise<number> => {
    let code = 0;
    try {
      if ((await within(running[Symbol.asyncDispose](), cfg.shutdownTimeoutMs)) === 'timeout') code = 1;
    } catch (e) {
      log.error('stopped with errors', { error: errorFields(e as Error) });
      code = 1;
    }
    client.close();
    return code;
  };
  fatal.onExit(stop);
  return shutdown.run(stop);
}
