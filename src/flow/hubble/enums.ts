/**
 * flow.proto's enums, read from the proto (proto/hubble at the package root), so the proto is their
 * one source: the flow filter resolves names against them (verdict, direction, IP version, drop
 * reason). PROTO_OPTIONS are the load options every Hubble module shares: snake_case keys, enums
 * as names, 64-bit integers as numbers, no defaults filled in, oneofs named. A message is then a
 * plain object such as `{ flow: { verdict: 'DROPPED', IP: { source: '10.0.0.1' } } }`.
 */
import * as protoLoader from '@grpc/proto-loader';
import { join } from 'node:path';
import { enumValues } from './descriptors.js';

export const PROTO_OPTIONS: protoLoader.Options = Object.freeze({ keepCase: true, enums: String, longs: Number, defaults: false, oneofs: true });

/** flow.proto's enums the flow filter resolves: name → number. */
export interface FlowEnums {
  readonly verdict: ReadonlyMap<string, number>;
  readonly trafficDirection: ReadonlyMap<string, number>;
  readonly ipVersion: ReadonlyMap<string, number>;
  readonly dropReason: ReadonlyMap<string, number>;
}

function enumOf(def: protoLoader.PackageDefinition, name: string): ReadonlyMap<string, number> {
  if (!(name in def)) throw new Error(`the Hubble protos have no enum ${name}`);
  return new Map(enumValues(def, name).map((v) => [v.name, v.number]));
}

/** The enums out of a loaded package definition that includes flow.proto. */
export function flowEnums(def: protoLoader.PackageDefinition): FlowEnums {
  return {
    verdict: enumOf(def, 'flow.Verdict'), trafficDirection: enumOf(def, 'flow.TrafficDirection'),
    ipVersion: enumOf(def, 'flow.IPVersion'), dropReason: enumOf(def, 'flow.DropReason'),
  };
}

/** Only flow.proto's enums (for the flow filter without the gRPC services); `dir` holds flow.proto. */
export function loadFlowEnums(dir: string): FlowEnums {
  return flowEnums(protoLoader.loadSync(join(dir, 'flow.proto'), { ...PROTO_OPTIONS, includeDirs: [dir] }));
}
