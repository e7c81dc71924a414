export * as catalog from './catalog.js';
export type { MetricDef, MetricType } from './catalog.js';
export { createMetricsRegistry, replaceSeries, type MetricWriters, type MetricsRegistry, type Labels } from './registry.js';
export { SeriesFamily, SEP, cleanLabelValue, drain } from './series.js';
export type { CustomFamily } from './registry.js';
