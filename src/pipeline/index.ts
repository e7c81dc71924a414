/**
 * The node's flow pipeline (sources → enricher → consumers), built once by node.ts; see
 * docs/architecture.md. Only node.ts loads here: the Kubernetes and pod-level parts are loaded by
 * it when used (startNodeWatches, startNodePipeline), so a standalone agent loads no Kubernetes code.
 *
 * Why a floor of its own (STYLE.md section 13's row) and not inside an existing one: it joins the
 * informers (k8s), the IP cache, the enricher and the Metrics Module, and no lower floor may import
 * all of them (k8s may not import the enricher or metrics, the enricher not k8s); src/cli may, but
 * holds wiring only. It imports no plugins, ffi or server: what it feeds is handed in.
 */
export { startNodePipeline, startNodeWatches, type NamedConsumer, type NodePipeline, type NodePipelineOptions } from './node.js';
export type { NodeWatches } from './watches.js';
export type { SpecController } from './pod-level-spec.js';
export type { PodForgetter } from './pod-level-forget.js';
