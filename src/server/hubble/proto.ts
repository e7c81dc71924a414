/**
 * Loads our Hubble .proto files (proto/hubble at the package root) with the options every hubble
 * module shares: snake_case keys, enums as names, 64-bit integers as numbers, no defaults filled
 * in, oneofs named. A message is then a plain object such as
 * `{ flow: { verdict: 'DROPPED', IP: { source: '10.0.0.1' } }, response_types: 'flow' }`.
 * The enums the flow filter resolves (verdict, direction, IP version, drop reason) are read from
 * flow.proto here too, so the proto is their one source.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { join } from 'node:path';
import { createFrameEncoder, type Encoder } from './encode.js';

export const PROTO_OPTIONS: protoLoader.Options = Object.freeze({ keepCase: true, enums: String, longs: Number, defaults: false, oneofs: true });

/** flow.proto's enums the flow filter resolves: name → number. */
export interface FlowEnums {
  readonly verdict: ReadonlyMap<string, number>;
  readonly trafficDirection: ReadonlyMap<string, number>;
  readonly ipVersion: ReadonlyMap<string, number>;
  readonly dropReason: ReadonlyMap<string, number>;
}

export interface HubbleProtos {
  readonly observer: grpc.ServiceDefinition;
  readonly peer: grpc.ServiceDefinition;
  readonly health: grpc.ServiceDefinition;
  /** A GetFlowsResponse as one gRPC frame (encode.ts; throws on what it cannot write). */
  readonly flowsFrame: Encoder;
  /** Client constructors, for tests and tools. */
  readonly ObserverClient: grpc.ServiceClientConstructor;
  readonly PeerClient: grpc.ServiceClientConstructor;
  readonly HealthClient: grpc.ServiceClientConstructor;
  readonly enums: FlowEnums;
}

interface EnumDefinition {
  readonly format: string;
  readonly type: { readonly value: readonly { readonly name: string; readonly number: number }[] };
}

function enumOf(def: protoLoader.PackageDefinition, name: string): ReadonlyMap<string, number> {
  const e = def[name] as EnumDefinition | undefined;
  if (e === undefined || !e.format.includes('EnumDescriptorProto')) throw new Error(`the Hubble protos have no enum ${name}`);
  return new Map(e.type.value.map((v) => [v.name, v.number]));
}

function flowEnums(def: protoLoader.PackageDefinition): FlowEnums {
  return {
    verdict: enumOf(def, 'flow.Verdict'), trafficDirection: enumOf(def, 'flow.TrafficDirection'),
    ipVersion: enumOf(def, 'flow.IPVersion'), dropReason: enumOf(def, 'flow.DropReason'),
  };
}

/** Only flow.proto's enums (for the flow filter without the gRPC services). */
export function loadFlowEnums(dir: string): FlowEnums {
  return flowEnums(protoLoader.loadSync(join(dir, 'flow.proto'), { ...PROTO_OPTIONS, includeDirs: [dir] }));
}

/** `dir`: the folder with observer.proto, flow.proto, relay.proto, peer.proto and health.proto. */
export function loadHubbleProtos(dir: string): HubbleProtos {
  const def = protoLoader.loadSync([join(dir, 'observer.proto'), join(dir, 'peer.proto'), join(dir, 'health.proto')], { ...PROTO_OPTIONS, includeDirs: [dir] });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    observer: { Observer: grpc.ServiceClientConstructor };
    peer: { Peer: grpc.ServiceClientConstructor };
    grpc: { health: { v1: { Health: grpc.ServiceClientConstructor } } };
  };
  const health = pkg.grpc.health.v1.Health;
  return {
    flowsFrame: createFrameEncoder(def, 'observer.GetFlowsResponse'),
    observer: pkg.observer.Observer.service, peer: pkg.peer.Peer.service, health: health.service,
    ObserverClient: pkg.observer.Observer, PeerClient: pkg.peer.Peer, HealthClient: health, enums: flowEnums(def),
  };
}
