/**
 * Our Hubble .proto files (proto/hubble at the package root; parsed once by src/flow/hubble/protos.ts,
 * shared with the flow-log export) as gRPC services, loaded with the options every hubble module shares: snake_case keys, enums as names, 64-bit integers as numbers, no defaults filled
 * in, oneofs named. A message is then a plain object such as
 * `{ flow: { verdict: 'DROPPED', IP: { source: '10.0.0.1' } }, response_types: 'flow' }`.
 * The enums the flow filter resolves come from src/flow/hubble/enums.ts (the same proto).
 */
import * as grpc from '@grpc/grpc-js';
import { createFlowJson, createFlowJsonReader, flowEnums, hubbleProtoFiles, type FieldMask, type FlowEnums, type FlowJsonReader, type HubbleObject, type HubbleProtoFiles } from '../../flow/hubble/index.js';
import { createFrameEncoder, type Encoder } from './encode.js';
import { createCelCompiler, type CelCompiler } from './cel.js';
import { celSamples } from './cel-samples.js';

export { loadFlowEnums, PROTO_OPTIONS, type FlowEnums } from '../../flow/hubble/index.js';

export interface HubbleProtos {
  readonly observer: grpc.ServiceDefinition;
  readonly peer: grpc.ServiceDefinition;
  readonly health: grpc.ServiceDefinition;
  /** A GetFlowsResponse as one gRPC frame (encode.ts; throws on what it cannot write). */
  readonly flowsFrame: Encoder;
  /** flow.Flow field-mask paths compiled against flow.proto (json.ts; throws FieldMaskError naming a path that names no field). */
  readonly fieldMask: (paths: readonly string[]) => FieldMask | undefined;
  /** Compiles a FlowFilter's CEL expressions (cel.ts; its descriptors are made on the first use). */
  readonly cel: CelCompiler;
  /** A protojson flow.Flow (a stored flow-log line's `flow`, freshly parsed: read in place) as a Hubble flow object (json-read.ts; throws on a bad one). */
  readonly readFlowJson: (json: Record<string, unknown>) => HubbleObject;
  /** Client constructors, for tests and tools. */
  readonly ObserverClient: grpc.ServiceClientConstructor;
  readonly PeerClient: grpc.ServiceClientConstructor;
  readonly HealthClient: grpc.ServiceClientConstructor;
  readonly enums: FlowEnums;
}

/**
 * From the Hubble protos parsed once and shared with the flow-log export (src/flow/hubble's
 * hubbleProtoFiles, what the agent passes), or from `dir`, the folder with observer.proto, flow.proto,
 * relay.proto, peer.proto and health.proto (parsed here).
 */
export function loadHubbleProtos(from: string | HubbleProtoFiles): HubbleProtos {
  const def = (typeof from === 'string' ? hubbleProtoFiles(from) : from).definition();
  if (!('observer.Observer' in def)) throw new Error('the Hubble protos given have no Observer service (made with FLOW_PROTO_FILES? the server needs HUBBLE_PROTO_FILES)');
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    observer: { Observer: grpc.ServiceClientConstructor };
    peer: { Peer: grpc.ServiceClientConstructor };
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const health = pkg.grpc.health.v1.Health;
  let json: ReturnType<typeof createFlowJson> | undefined;
  let cel: CelCompiler | undefined;
  const celCompiler = (): CelCompiler => {
    const flowFrame = createFrameEncoder(def, 'flow.Flow');
    return createCelCompiler({ def, encodeFlow: (f) => flowFrame(f).subarray(5), samples: celSamples('node') });
  };
  const flowJson = (): ReturnType<typeof createFlowJson> => (json ??= createFlowJson(def));
  let reader: FlowJsonReader | undefined;
  return {
    flowsFrame: createFrameEncoder(def, 'observer.GetFlowsResponse'),
    fieldMask: (paths) => flowJson().mask(paths),
    cel: (exprs, path) => (cel ??= celCompiler())(exprs, path),
    readFlowJson: (j) => (reader ??= createFlowJsonReader(def)).flow(j),
    observer: pkg.observer.Observer.service, peer: pkg.peer.Peer.service, health: health.service,
    ObserverClient: pkg.observer.Observer, PeerClient: pkg.peer.Peer, HealthClient: health, enums: flowEnums(def),
  };
}
