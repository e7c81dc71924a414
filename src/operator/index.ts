/** The operator's controllers. */
export { createController, type Controller, type ControllerOptions, type ReconcileResult } from './controller.js';
export { createRetinaEndpointController, canonical, podToSpec, specHash, type RetinaEndpointController, type SlimPod, type SlimEndpoint } from './retina-endpoint-controller.js';
export { createRetinaEndpointSliceController, sliceEntry, type RetinaEndpointSliceController, type SlimSliceState } from './retina-endpoint-slice-controller.js';
export { createMetricsConfigurationController, type MetricsConfigurationController } from './metrics-configuration.js';
export { installCrds, readCrds } from './crd-installer.js';
export { operatorKeys, operatorConfig, parseAddr, DEFAULT_LABEL_ALLOWLIST, type OperatorConfig, type OperatorKeys } from './config.js';
export { leaderStatus, reflectorEvents, reflectorRejected } from './metrics.js';
export { createCaptureController, CAPTURE_FINALIZER, type CaptureController, type CaptureControllerOptions } from './capture-controller.js';
export { createContainerNetworkLogController, describeProblems, type ContainerNetworkLogController } from './container-network-log.js';
