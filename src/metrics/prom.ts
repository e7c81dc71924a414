/**
 * prom-client's classes from their own files rather than its index: the index also loads its
 * Pushgateway (node:http, node:https, node:zlib), its cluster AggregatorRegistry (node:cluster) and
 * Summary (tdigest), which an agent never uses. Loaded by both the agent and the operator, so this
 * costs every process several MB of RSS (bench/agent/footprint.bench.ts). Types come from the index.
 */
import type * as Prom from 'prom-client';
import CounterImpl from 'prom-client/lib/counter.js';
import collectDefaultMetricsImpl from 'prom-client/lib/defaultMetrics.js';
import GaugeImpl from 'prom-client/lib/gauge.js';
import HistogramImpl from 'prom-client/lib/histogram.js';
import RegistryImpl from 'prom-client/lib/registry.js';

export const Registry = RegistryImpl as typeof Prom.Registry;
export type Registry = Prom.Registry;
export const Counter = CounterImpl as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = GaugeImpl as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = HistogramImpl as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
export const collectDefaultMetrics = collectDefaultMetricsImpl as typeof Prom.collectDefaultMetrics;
