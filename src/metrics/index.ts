export * as catalog from './catalog.js';
export { defineMetric, type MetricDef, type MetricType } from './catalog.js';
export { createMetricsRegistry, replaceSeries, replaceSeriesWrites, type MetricWriters, type MetricsRegistry, type Labels, type ExposedBody } from './registry.js';
export { SeriesFamily, SEP, cleanLabelValue, drain } from './series.js';
export type { CustomFamily } from './registry.js';
export { validateMetricsSpec, describeIssues, annotationSpec, sameSpec, ANNOTATION_METRICS, ANNOTATION_CONTEXT } from './spec.js';
export type { MetricsSpec, ContextOption, ContextLabel, NamespaceFilter, SpecCheck, SpecIssue } from './spec.js';
