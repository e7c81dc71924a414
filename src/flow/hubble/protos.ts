/**
 * Hubble's .proto files parsed once, on first use, and shared. The Hubble service (its gRPC services,
 * the GetFlows encoder, the filter's enums) and the flow-log export (the protojson writer, the
 * filter's enums) read one package definition: observer.proto with the flow.proto it imports (the
 * largest of them), peer.proto and health.proto, loaded with PROTO_OPTIONS (flow.proto alone when the
 * Hubble server is off). Before, with Hubble and flow logs both on, flow.proto was parsed twice (CPU,
 * cold, five runs each on the test VM at load 7: 52-90 ms, now 37-61 ms). src/cli makes one of these and hands it to both;
 * nothing is parsed until one of them asks.
 */
import * as protoLoader from '@grpc/proto-loader';
import type { PackageDefinition } from '@grpc/proto-loader';
import { join } from 'node:path';
import { PROTO_OPTIONS } from './enums.js';

/** The files loaded for the Hubble server (their imports, flow.proto among them, come along). */
export const HUBBLE_PROTO_FILES: readonly string[] = ['observer.proto', 'peer.proto', 'health.proto'];
/** flow.proto alone: enough for the flow-log export (a third less to parse when the Hubble server is off). */
export const FLOW_PROTO_FILES: readonly string[] = ['flow.proto'];

export interface HubbleProtoFiles {
  /** The folder of the .proto files (proto/hubble at the package root). */
  readonly dir: string;
  /** The package definition, parsed on the first call; the same object after. */
  definition(): PackageDefinition;
}

/** `files`: HUBBLE_PROTO_FILES (the default) when the Hubble server is among the users, else FLOW_PROTO_FILES. */
export function hubbleProtoFiles(dir: string, files: readonly string[] = HUBBLE_PROTO_FILES): HubbleProtoFiles {
  let def: PackageDefinition | undefined;
  return {
    dir,
    definition: () => (def ??= protoLoader.loadSync(files.map((f) => join(dir, f)), { ...PROTO_OPTIONS, includeDirs: [dir] })),
  };
}
