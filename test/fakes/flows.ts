import type { FlowConsumer } from '../../src/flow/index.js';

/**
 * A consumer that discards every batch: the sink of tests and benchmarks that need a `flows` but not
 * the flows (the agent gives a plugin no sink when no flows are wanted: `PluginContext.flows` undefined).
 */
export const discardFlows: FlowConsumer = { consume: () => undefined };
