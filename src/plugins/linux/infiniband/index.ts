/**
 * The infiniband plugin: every metrics interval, reads the port counters of each InfiniBand device
 * and the debug status parameters of each `ib*` interface from sysfs, and replaces the series of
 * `infiniband_counter_stats` and `infiniband_status_params` with what it read.
 */
import { access } from 'node:fs/promises';
import { catalog, replaceSeries } from '../../../metrics/index.js';
import { PermanentError, ResourceStack, definePlugin, errMessage, poll, type PluginDefinition } from '../../../plugin/index.js';
import { counterRows, describeFailures, statusRows } from './decode.js';
import { DEFAULT_SYSFS_ROOT, infinibandClassDir, netClassDir, readInfiniband } from './read.js';

/** The plugin reads no configuration keys. */
export type InfinibandConfig = Readonly<Record<string, never>>;

export interface InfinibandOptions {
  /** The sysfs mount to read (default `/sys`); tests point it at a fixture tree. Not a config key. */
  readonly root?: string;
}

const emits = [catalog.infinibandCounterStats, catalog.infinibandStatusParams] as const;

/** Builds the definition; `infiniband` below is the one the agent runs (root `/sys`). */
export function createInfinibandPlugin(opts: InfinibandOptions = {}): PluginDefinition<InfinibandConfig> {
  const root = opts.root ?? DEFAULT_SYSFS_ROOT;
  const classDir = infinibandClassDir(root);
  return definePlugin<InfinibandConfig>({
    name: 'infiniband',
    os: 'linux',
    description: 'InfiniBand port counters and IPoIB debug status parameters, read from sysfs',
    defaultEnabled: false,
    config: {},
    hooks: [
      { kind: 'file', path: classDir },
      // Read for status parameters; present on every Linux host, so not a start condition.
      { kind: 'file', path: netClassDir(root), optional: true },
    ],
    emits,
    start: (ctx) =>
      ResourceStack.build(async (s) => {
        await requireInfiniband(classDir);
        const counters = ctx.metrics.gauge(catalog.infinibandCounterStats);
        const status = ctx.metrics.gauge(catalog.infinibandStatusParams);
        s.defer(() => ctx.metrics.reset(emits));
        // The first read settles status and series before start returns; then one per interval.
        await poll(s, ctx.agent.metricsIntervalMs, async (signal) => {
          const snap = await readInfiniband(root);
          if (signal.aborted) return;
          replaceSeries(counters, counterRows(snap.counters));
          replaceSeries(status, statusRows(snap.statusParams));
          if (snap.failed.length > 0) ctx.status.degraded('statistics', describeFailures(snap.failed));
          else ctx.status.ok('statistics');
        }, (e) => ctx.status.degraded('statistics', `reading InfiniBand statistics failed: ${errMessage(e)}`));
      }),
  });
}

export const infiniband = createInfinibandPlugin();

/** Without the class directory the host has no InfiniBand (or it is not mounted): retrying cannot help. */
async function requireInfiniband(classDir: string): Promise<void> {
  try {
    await access(classDir);
  } catch (e) {
    throw new PermanentError(`no InfiniBand on this host: ${classDir} is missing (no RDMA driver loaded, or the directory is not mounted into the agent)`, { cause: e });
  }
}
