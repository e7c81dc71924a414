/** What watcher.ts reports to fleet.ts over the IPC channel, and the label that marks a change (a module without side effects). */

export const MARKER_LABEL = 'bench-marker';

export interface WatcherStats {
  readonly id: number;
  readonly synced: boolean;
  readonly syncedAt: number | undefined;
  readonly bytes: number;
  readonly pods: number;
  readonly events: number;
  readonly lists: number;
  readonly gone: number;
  readonly reconnects: number;
  readonly errors: number;
  readonly marker: string | undefined;
  readonly markerAt: number | undefined;
}

export type WatcherMessage =
  | { type: 'synced'; id: number; at: number; bytes: number }
  | { type: 'stats'; startedAt: number; watchers: WatcherStats[]; rssMB: number; heapMB: number; cpuS: number };
