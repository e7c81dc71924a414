/**
 * What decides the agent's advanced metrics, watched from the API server: MetricsConfigurations
 * (cluster-scoped; only one whose status.state is Accepted applies, as in Retina) or, in annotation
 * mode, the Namespaces annotated `retina.sh: observe`. The specs stay raw here: parsing them is the
 * metrics module's job (src/metrics sits above src/k8s), done where the graph is built.
 */
import type { MetricsConfiguration, MetricsConfigurationSpec, MetricsConfigurationState } from './crd/metrics-configuration.js';
import type { Informer, InformerFactory } from './informers.js';
import { OBSERVE_ANNOTATION, OBSERVE_VALUE } from './interest.js';
import { resources, type KubeObject } from './resources.js';

export interface SlimMetricsConfiguration {
  readonly name: string;
  readonly created: string;
  readonly generation: number;
  readonly state: MetricsConfigurationState | undefined;
  readonly spec: MetricsConfigurationSpec | undefined;
  /** The spec the operator accepted (status.lastKnownSpec). */
  readonly acceptedSpec: MetricsConfigurationSpec | undefined;
}

const slimMc = (m: MetricsConfiguration): SlimMetricsConfiguration => ({
  name: m.metadata.name, created: m.metadata.creationTimestamp ?? '', generation: m.metadata.generation ?? 0,
  state: m.status?.state, spec: m.spec, acceptedSpec: m.status?.lastKnownSpec,
});

export function watchMetricsConfigurations(factory: InformerFactory): Informer<SlimMetricsConfiguration> {
  return factory.informer({ resource: resources.metricsConfigurations, transform: slimMc });
}

/**
 * The MetricsConfiguration that applies: the oldest one whose status.state is Accepted (the operator
 * keeps at most one Accepted). Its spec is the one the operator accepted when the status has it, so
 * an edit applies only once validated; else the spec itself.
 */
export function acceptedMetricsConfiguration(all: readonly SlimMetricsConfiguration[]): { name: string; spec: unknown } | undefined {
  const accepted = all.filter((m) => m.state === 'Accepted').sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.name < b.name ? -1 : 1));
  const m = accepted[0];
  if (!m) return undefined;
  return { name: m.name, spec: m.acceptedSpec ?? m.spec };
}

/** Namespaces annotated `retina.sh: observe`: the informer's keys are their names (others are not kept). */
const annotatedName = (n: KubeObject): string | undefined => (n.metadata.annotations?.[OBSERVE_ANNOTATION] === OBSERVE_VALUE ? n.metadata.name : undefined);

export function watchAnnotatedNamespaces(factory: InformerFactory): Informer<string> {
  return factory.informer({ resource: resources.namespaces, transform: annotatedName });
}
