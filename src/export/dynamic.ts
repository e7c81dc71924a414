/**
 * Cilium's dynamic Hubble exporters (hubble.export.dynamic, `hubble-flowlogs-config-path`): a YAML
 * file in Cilium's flowlogs.yaml format lists exporters, each its own file, filters and field mask,
 * and the file is followed while the agent runs:
 *
 *   flowLogs:
 *   - name: all                      # required, unique
 *     filePath: /var/run/...log      # required, unique
 *     includeFilters: [...]          # FlowFilters (Hubble's syntax); empty: every flow
 *     excludeFilters: [...]
 *     fieldMask: [time, verdict]     # empty: every field
 *     fileMaxSizeMb: 10              # 0 or absent: the static exporter's setting
 *     fileMaxBackups: 5
 *     fileCompress: false
 *     aggregationInterval: 30s       # ours: >0s writes aggregated records (aggregate.ts)
 *     end: "2026-01-01T00:00:00Z"    # optional: the exporter stops then
 *
 * The file is re-read when it changes (fs.watch on its directory, where a ConfigMap's mount swaps
 * its `..data` link, plus a poll, since watches miss changes on some file systems). An exporter
 * whose entry did not change keeps running (its file stays open); a changed one is replaced; a
 * removed one is closed. Content that does not parse or validate changes nothing: the last good
 * exporters keep running and the error names the field (`flowLogs[1].includeFilters[0].source_pod`).
 */
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { parseDurationMs, type ExportFileConfig } from '../config/index.js';
import type { FlowBatch, FlowConsumer } from '../flow/index.js';
import { errorFields, type Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import { createFlowExporter, type ExportProtos, type FlowExporter } from './exporter.js';
import { checkExportFilters, ExportConfigError, fileSinkFor } from './check.js';
import { settableSelection, type SettableSelection } from './selection.js';
import type { FlowFilterObject } from './types.js';

export interface DynamicExportersOptions {
  readonly path: string;
  /** File settings for entries that leave them at 0 / unset (the static exporter's). */
  readonly defaults: Omit<ExportFileConfig, 'path'>;
  readonly aggregationMaxKeys: number;
  readonly nodeName: string;
  readonly protos: ExportProtos;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  /** How often the file is also polled, ms (default 5000). */
  readonly pollMs?: number;
}

/** One validated entry of the file. */
export interface DynamicEntry {
  readonly name: string;
  readonly file: ExportFileConfig;
  readonly includeFilters: readonly FlowFilterObject[];
  readonly excludeFilters: readonly FlowFilterObject[];
  readonly fieldMask: readonly string[];
  readonly aggregationIntervalMs: number;
  /** ms since the epoch, or undefined for no end. */
  readonly endMs: number | undefined;
}

const KNOWN = new Set(['name', 'filePath', 'fieldMask', 'fieldAggregate', 'aggregationInterval', 'includeFilters', 'excludeFilters', 'fileMaxSizeMb', 'fileMaxBackups', 'fileCompress', 'end']);

/** Parses and validates flowlogs.yaml; throws ExportConfigError naming the field. */
export function parseDynamicConfig(text: string, defaults: Omit<ExportFileConfig, 'path'>, protos: ExportProtos): DynamicEntry[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (e) {
    throw new ExportConfigError('(file)', `not valid YAML: ${(e as Error).message.split('\n')[0]}`);
  }
  if (doc === null || doc === undefined) return [];
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ExportConfigError('(file)', 'must be a mapping with a flowLogs list');
  const list = (doc as Record<string, unknown>)['flowLogs'];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new ExportConfigError('flowLogs', 'must be a list');
  const names = new Set<string>();
  const paths = new Set<string>();
  return list.map((raw: unknown, i): DynamicEntry => {
    const at = `flowLogs[${i}]`;
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ExportConfigError(at, 'must be a mapping');
    const r = raw as Record<string, unknown>;
    for (const k of Object.keys(r)) if (!KNOWN.has(k)) throw new ExportConfigError(`${at}.${k}`, 'is not a flowLogs field');
    const str = (k: string): string => {
      const v = r[k];
      if (v === undefined || v === null) return '';
      if (typeof v !== 'string') throw new ExportConfigError(`${at}.${k}`, 'must be a string');
      return v.trim();
    };
    const int = (k: string, min: number): number => {
      const v = r[k];
      if (v === undefined || v === null) return 0;
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) throw new ExportConfigError(`${at}.${k}`, `must be an integer >= ${min}`);
      return v;
    };
    const list = (k: string): unknown[] => {
      const v = r[k];
      if (v === undefined || v === null) return [];
      if (!Array.isArray(v)) throw new ExportConfigError(`${at}.${k}`, 'must be a list');
      return v;
    };
    const name = str('name');
    if (name === '') throw new ExportConfigError(`${at}.name`, 'is required');
    if (names.has(name)) throw new ExportConfigError(`${at}.name`, `duplicated flowlog name ${name}`);
    names.add(name);
    const filePath = str('filePath');
    if (filePath === '') throw new ExportConfigError(`${at}.filePath`, 'is required');
    if (paths.has(filePath)) throw new ExportConfigError(`${at}.filePath`, `duplicated flowlog path ${filePath}`);
    paths.add(filePath);
    const include = list('includeFilters');
    const exclude = list('excludeFilters');
    const mask = list('fieldMask');
    mask.forEach((m, j) => {
      if (typeof m !== 'string') throw new ExportConfigError(`${at}.fieldMask[${j}]`, 'must be a string');
    });
    checkExportFilters(protos, include, exclude, mask as string[], { allow: `${at}.includeFilters`, deny: `${at}.excludeFilters`, mask: `${at}.fieldMask` });
    const interval = str('aggregationInterval') || '0s';
    const aggregationIntervalMs = parseDurationMs(interval);
    if (aggregationIntervalMs === undefined) throw new ExportConfigError(`${at}.aggregationInterval`, 'must be a duration such as 30s');
    let endMs: number | undefined;
    const end = r['end'];
    if (end !== undefined && end !== null) {
      endMs = end instanceof Date ? end.getTime() : typeof end === 'string' ? Date.parse(end) : NaN;
      if (!Number.isFinite(endMs)) throw new ExportConfigError(`${at}.end`, 'must be an RFC 3339 time such as 2026-01-01T00:00:00Z');
    }
    const compress = r['fileCompress'];
    if (compress !== undefined && compress !== null && typeof compress !== 'boolean') throw new ExportConfigError(`${at}.fileCompress`, 'must be true or false');
    return {
      name,
      file: { path: filePath, maxSizeMb: int('fileMaxSizeMb', 0) || defaults.maxSizeMb, maxBackups: int('fileMaxBackups', 0) || defaults.maxBackups, compress: compress === true },
      includeFilters: include as FlowFilterObject[], excludeFilters: exclude as FlowFilterObject[], fieldMask: mask as string[], aggregationIntervalMs, endMs,
    };
  });
}

/** Disposing it stops following the file and disposes every exporter in force. */
export interface DynamicExporters extends FlowConsumer, AsyncDisposable {
  /** The entries in force (for tests and diagnostics). */
  names(): string[];
  /** Re-reads the file now. */
  reload(): Promise<void>;
}

interface Running {
  readonly key: string;
  readonly entry: DynamicEntry;
  readonly exporter: FlowExporter;
  readonly selection: SettableSelection;
}

export function startDynamicExporters(o: DynamicExportersOptions): DynamicExporters {
  const log = o.log.child({ component: 'flow-log', dynamic: o.path });
  let running = new Map<string, Running>();
  let list: FlowExporter[] = [];
  let lastText: string | undefined;
  let lastError = '';
  let closed = false;
  let reading: Promise<void> | undefined;

  const start = (e: DynamicEntry): Running => {
    const selection = settableSelection({ active: e.endMs === undefined || e.endMs > Date.now(), allow: e.includeFilters, deny: e.excludeFilters });
    const exporter = createFlowExporter({
      name: `dynamic:${e.name}`, selection, fieldMask: o.protos.json.mask(e.fieldMask),
      aggregation: e.aggregationIntervalMs > 0 ? { intervalMs: e.aggregationIntervalMs, maxKeys: o.aggregationMaxKeys } : undefined,
      sinks: [fileSinkFor(e.file, o.metrics, o.log)], nodeName: o.nodeName, protos: o.protos, metrics: o.metrics, log: o.log,
    });
    return { key: JSON.stringify(e), entry: e, exporter, selection };
  };

  /** Entries past their `end` stop exporting (their selection goes inactive). */
  const checkEnds = (): void => {
    const now = Date.now();
    for (const r of running.values()) {
      const active = r.entry.endMs === undefined || r.entry.endMs > now;
      if (r.selection.current().active !== active) {
        r.selection.set({ active, allow: r.entry.includeFilters, deny: r.entry.excludeFilters });
        log.info(active ? 'dynamic flow log active' : 'dynamic flow log ended', { name: r.entry.name });
      }
    }
  };

  const apply = async (entries: DynamicEntry[]): Promise<void> => {
    const next = new Map<string, Running>();
    const closing: PromiseLike<void>[] = [];
    for (const e of entries) {
      const key = JSON.stringify(e);
      const had = running.get(e.name);
      if (had && had.key === key) {
        next.set(e.name, had);
        continue;
      }
      if (had) closing.push(had.exporter[Symbol.asyncDispose]());
      next.set(e.name, start(e));
    }
    for (const [name, r] of running) if (!next.has(name)) closing.push(r.exporter[Symbol.asyncDispose]());
    const before = [...running.keys()];
    running = next;
    list = [...next.values()].map((r) => r.exporter);
    await Promise.allSettled(closing);
    log.info('dynamic flow logs in force', { names: [...next.keys()], before });
  };

  const read = async (): Promise<void> => {
    let text: string;
    try {
      text = await readFile(o.path, 'utf8');
    } catch (e) {
      const msg = `cannot read the file: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`;
      if (msg !== lastError) log.warn('dynamic flow-log config unreadable; the exporters in force stay', { error: msg });
      lastError = msg;
      return;
    }
    if (text === lastText || closed) return;
    let entries: DynamicEntry[];
    try {
      entries = parseDynamicConfig(text, o.defaults, o.protos);
    } catch (e) {
      if (!(e instanceof ExportConfigError)) throw e;
      if (e.message !== lastError) log.error('dynamic flow-log config rejected; the last good one stays in force', { field: e.field, error: e.message });
      lastError = e.message;
      lastText = text;
      return;
    }
    lastText = text;
    lastError = '';
    await apply(entries);
  };

  const reload = (): Promise<void> => {
    reading ??= read().catch((e: unknown) => log.error('dynamic flow-log reload failed', { error: errorFields(e as Error) })).finally(() => {
      reading = undefined;
    });
    return reading;
  };

  let watcher: FSWatcher | undefined;
  try {
    const file = basename(o.path);
    watcher = watch(dirname(o.path), { persistent: false }, (_event, changed) => {
      // A ConfigMap mount swaps `..data`; a plain file changes in place.
      if (changed === null || changed === file || changed.startsWith('..')) void reload();
    });
    watcher.on('error', () => undefined);
  } catch (e) {
    log.warn('cannot watch the dynamic flow-log config directory; polling only', { error: errorFields(e as Error) });
  }
  const poll = setInterval(() => {
    checkEnds();
    void reload();
  }, o.pollMs ?? 5000);
  poll.unref();
  void reload();

  return {
    consume(batch: FlowBatch) {
      for (const e of list) e.consume(batch);
    },
    names: () => [...running.keys()],
    reload,
    async [Symbol.asyncDispose]() {
      closed = true;
      clearInterval(poll);
      watcher?.close();
      await reading;
      await Promise.allSettled([...running.values()].map((r) => r.exporter[Symbol.asyncDispose]()));
      running = new Map();
      list = [];
    },
  };
}
