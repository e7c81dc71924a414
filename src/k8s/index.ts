/** The Kubernetes layer: transport, credentials, reflectors and informers, work queue, leader election, CR types. */
export { ApiError, createRestClient, isApiError, type RestClient, type RestConfig, type RequestOptions, type WatchStream } from './rest.js';
export { attachToPod, execInPod, type ExecOptions, type ExecStatus, type StreamOptions, type TerminalSize } from './exec.js';
export { KubeconfigError, kubernetesAvailable, loadRestConfig, restConfigFromKubeConfig, type KubeConfigLike, type LoadRestConfigOptions } from './kubeconfig.js';
export { describeKubeconfig, tokenSubject, type KubeIdentity } from './kubeconfig-identity.js';
export { sleep, systemClock, type Clock } from './clock.js';
export { Reflector, type ReflectorEvent, type ReflectorHandler, type ReflectorOptions, type ReflectorStats } from './reflector.js';
export { createInformerFactory, type Informer, type InformerFactory, type InformerSpec, type Store } from './informers.js';
export { TokenBucket, WorkQueue, type WorkQueueMetrics, type WorkQueueOptions } from './workqueue.js';
export { startLeaderElection, type LeaderElectionOptions, type LeaderElector } from './leader-election.js';
export { createEventRecorder, type EventRecorder, type EventTarget } from './events.js';
export { startAgentWatch, type AgentWatch, type AgentWatchOptions } from './agent-watch.js';
export {
  OBSERVE_ANNOTATION, OBSERVE_VALUE, computeInterest, createInterestSet, podAnnotated, type InterestSelection, type InterestSet, type InterestSetOptions,
} from './interest.js';
export { serverHost, startApiServerIps, type ApiServerIps, type ApiServerIpsOptions } from './apiserver-ips.js';
export { acceptedMetricsConfiguration, watchAnnotatedNamespaces, watchMetricsConfigurations, type SlimMetricsConfiguration } from './selection-watch.js';
export {
  CHART_AGENT_SELECTOR, apiVersionOf, collectionPath, keyOf, objectPath, resources, splitKey, type KubeList, type KubeObject, type ResourceRef,
} from './resources.js';
export {
  Interner, controllerOwners, endpointFromRetinaEndpoint, keyAllowlist, nodeTransform, pickKeys, podIps, podIsEndpoint, podTransform,
  resolveWorkload, serviceTransform, type KeyAllowlist, type NodeWire, type PodWire, type ServiceWire,
} from './slim.js';
export type { RetinaEndpoint, RetinaEndpointOwner, RetinaEndpointSpec } from './crd/retina-endpoint.js';
export { RETINA_ENDPOINT_SLICE_ENTRY_FIELDS, type RetinaEndpointSlice, type RetinaEndpointSliceEntry } from './crd/retina-endpoint-slice.js';
export { podsFromSlices, sameSlice, sliceTransform, type SlimSlice } from './endpoint-slices.js';
export type { MetricsConfiguration, MetricsConfigurationSpec, MetricsConfigurationState, MetricsConfigurationStatus, MetricsContextOption } from './crd/metrics-configuration.js';
export type { Capture, CaptureCondition, CaptureNodeState, CaptureSpec, CaptureStatus, CaptureTrigger, LabelSelector } from './crd/capture.js';
export {
  CNL_NAMESPACE_LABEL, CNL_PROTOCOLS, CNL_VERDICTS, CONTAINER_NETWORK_LOG_FIELDS, isIpOrCidr, validateContainerNetworkLogSpec,
  type ContainerNetworkLog, type ContainerNetworkLogCondition, type ContainerNetworkLogEndpoint, type ContainerNetworkLogFilter,
  type ContainerNetworkLogProtocol, type ContainerNetworkLogSpec, type ContainerNetworkLogState, type ContainerNetworkLogStatus, type ContainerNetworkLogVerdict,
} from './crd/container-network-log.js';
export { forwardLocally, openPortForward, type LocalForward, type PortForwardTarget } from './port-forward.js';
