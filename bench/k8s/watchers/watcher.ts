/**
 * A light stand-in for an agent, forked by fleet.ts: only the agent's watch layer (src/k8s
 * startAgentWatch, remote context: RetinaEndpoints (RetinaEndpointSlices with BENCH_WATCH_SLICES=1), Services, Nodes, into an IpCache; initial state
 * by WatchList or, with BENCH_WATCH_INITIAL=list, by LIST pages), no plugins. `BENCH_WATCHERS_PER_PROCESS` of them, each with its own REST client (its own
 * connections, as separate agents have). Reports over the IPC channel: `synced` per watch layer when
 * its informers have their initial state, and `stats` when asked. An endpoint whose labels carry
 * MARKER_LABEL (protocol.ts) is remembered with the time it arrived (how the bench sees a change reach every watcher).
 */
import { IpCache } from '../../../src/cache/index.js';
import { createRestClient, loadRestConfig, startAgentWatch } from '../../../src/k8s/index.js';
import { MARKER_LABEL, type WatcherMessage } from './protocol.js';

async function main(): Promise<void> {
  const kubeconfig = process.env['KUBECONFIG'];
  if (!kubeconfig || !process.send) throw new Error('watcher.ts is forked by fleet.ts with KUBECONFIG set');
  const n = Number(process.env['BENCH_WATCHERS_PER_PROCESS'] ?? '1');
  const config = await loadRestConfig({ kubeconfig, env: {} });
  const send = (m: WatcherMessage): void => void process.send?.(m);
  const layers = Array.from({ length: n }, (_, id) => {
    const client = createRestClient(config, { userAgent: `retina-bench-watcher/${process.pid}/${id}` });
    const cache = new IpCache();
    const watch = startAgentWatch({ client, cache, remoteContext: true, endpointSlices: process.env['BENCH_WATCH_SLICES'] === '1', initialState: process.env['BENCH_WATCH_INITIAL'] === 'list' ? 'list' : 'stream' });
    const state = { id, client, cache, watch, syncedAt: undefined as number | undefined, marker: undefined as string | undefined, markerAt: undefined as number | undefined };
    watch.pods.subscribe({
      updated: (_k, e) => {
        const m = e.labels[MARKER_LABEL];
        if (m !== undefined && m !== state.marker) {
          state.marker = m;
          state.markerAt = Date.now();
        }
      },
    });
    void watch.waitForSync().then(() => {
      state.syncedAt = Date.now();
      send({ type: 'synced', id, at: state.syncedAt, bytes: client.bytesReceived() });
    });
    return state;
  });
  process.on('message', (m: { cmd?: string }) => {
    if (m.cmd === 'stats') {
      const u = process.resourceUsage();
      send({
        type: 'stats', startedAt: performance.timeOrigin, rssMB: process.memoryUsage.rss() / 2 ** 20, heapMB: process.memoryUsage().heapUsed / 2 ** 20,
        cpuS: (u.userCPUTime + u.systemCPUTime) / 1e6,
        watchers: layers.map((l) => {
          const re = l.watch.stats().find((s) => s.resource.startsWith('retinaendpoints'));
          return {
            id: l.id, synced: l.watch.synced(), syncedAt: l.syncedAt, bytes: l.client.bytesReceived(), pods: l.cache.stats().pods,
            events: re?.events ?? 0, lists: re?.lists ?? 0, gone: re?.gone ?? 0, reconnects: re?.reconnects ?? 0, errors: re?.errors ?? 0,
            marker: l.marker, markerAt: l.markerAt,
          };
        }),
      });
    }
  });
  process.on('disconnect', () => process.exit(0));
}

await main();
