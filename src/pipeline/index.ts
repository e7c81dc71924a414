/**
 * The node's flow pipeline (sources → enricher → consumers), built once by node.ts; see
 * docs/architecture.md. Only node.ts loads here: the Kubernetes and pod-level parts are loaded by
 * it when used, so a standalone agent loads no Kubernetes code.
 */
export { startNodePipeline, type NamedConsumer, type NodePipeline, type NodePipelineOptions } from './node.js';
export type { SpecController } from './pod-level-spec.js';
export type { PodForgetter } from './pod-level-forget.js';
