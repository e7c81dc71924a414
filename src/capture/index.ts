/** Packet capture: the Capture spec model, the Job translator and target resolution (operator and CLI share them). */
export * from './spec.js';
export * from './job.js';
export * from './targets.js';
