/**
 * What the exporters share when built from configuration: checking filters and field masks the way
 * the exporter will use them (errors name the key and field), and the file sink of one exporter.
 */
import { compileFlowFilters, FieldMaskError, FilterError, type FieldMask } from '../flow/hubble/index.js';
import type { Logger } from '../log/index.js';
import type { MetricsRegistry } from '../metrics/index.js';
import { sinkCounts } from './counts.js';
import type { ExportProtos } from './exporter.js';
import { createFileSink } from './file.js';
import type { FlowLogSink } from './types.js';

/** A compile error of a configured filter or field mask, with the key and field it names. */
export class ExportConfigError extends Error {
  constructor(readonly field: string, problem: string) {
    super(`${field}: ${problem}`);
    this.name = 'ExportConfigError';
  }
}

/** Checks FlowFilter lists and a field mask as the exporter will use them; throws ExportConfigError naming `<key>[i].<field>`. */
export function checkExportFilters(p: ExportProtos, allow: readonly unknown[], deny: readonly unknown[], mask: readonly string[], keys: { allow: string; deny: string; mask: string }): FieldMask | undefined {
  try {
    compileFlowFilters(allow, deny, p.enums);
  } catch (e) {
    if (!(e instanceof FilterError)) throw e;
    const field = e.field.replace(/^whitelist/, keys.allow).replace(/^blacklist/, keys.deny);
    throw new ExportConfigError(field, e.message.slice(e.field.length + 2));
  }
  try {
    return p.json.mask(mask);
  } catch (e) {
    if (!(e instanceof FieldMaskError)) throw e;
    throw new ExportConfigError(`${keys.mask}: ${e.path}`, e.message.slice(e.path.length + 2));
  }
}

/** A file sink from one exporter's file settings. */
export function fileSinkFor(file: { path: string; maxSizeMb: number; maxBackups: number; compress: boolean }, metrics: MetricsRegistry, log: Logger, name = 'file'): FlowLogSink {
  return createFileSink({ path: file.path, maxSizeBytes: file.maxSizeMb * 1024 * 1024, maxBackups: file.maxBackups, compress: file.compress, counts: sinkCounts(metrics, name), log, name });
}
