/** MetricsConfiguration (retina.sh/v1alpha1, cluster-scoped), as the chart's CRD defines it. */
import type { KubeObject } from '../resources.js';

export interface MetricsContextOption {
  metricName: string;
  sourceLabels?: string[];
  destinationLabels?: string[];
  additionalLabels?: string[];
  ttl?: string;
}

export interface MetricsConfigurationSpec {
  contextOptions: MetricsContextOption[];
  namespaces: { include?: string[]; exclude?: string[] };
}

export type MetricsConfigurationState = 'Initialized' | 'Accepted' | 'Errored' | 'Warning';

export interface MetricsConfigurationStatus {
  state?: MetricsConfigurationState;
  reason?: string;
  lastKnownSpec?: MetricsConfigurationSpec;
  observedGeneration?: number;
}

export interface MetricsConfiguration extends KubeObject {
  spec: MetricsConfigurationSpec;
  status?: MetricsConfigurationStatus;
}

/** Spec, context-option and status fields, checked against the chart's CRD schema by crd.test.ts. */
export const METRICS_CONFIGURATION_FIELDS = {
  spec: ['contextOptions', 'namespaces'],
  contextOption: ['metricName', 'sourceLabels', 'destinationLabels', 'additionalLabels', 'ttl'],
  status: ['state', 'reason', 'lastKnownSpec', 'observedGeneration'],
} as const satisfies { spec: readonly (keyof MetricsConfigurationSpec)[]; contextOption: readonly (keyof MetricsContextOption)[]; status: readonly (keyof MetricsConfigurationStatus)[] };
