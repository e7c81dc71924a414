/**
 * Reading the message and enum descriptors @grpc/proto-loader keeps in a PackageDefinition: the one
 * walk under the writers driven by them (json.ts: protojson; src/server/hubble/encode.ts: protobuf)
 * and the enums the flow filter resolves (enums.ts). Each writer makes its own plan per message
 * (what it needs of a field) through `planner`, which builds a message's plan once, recursive
 * messages included.
 */
import type { PackageDefinition } from '@grpc/proto-loader';

/** A field as proto-loader describes it (FieldDescriptorProto, keepCase). */
export interface FieldDescriptor {
  readonly name: string;
  readonly number: number;
  readonly label: string;
  /** TYPE_STRING, TYPE_MESSAGE, ... */
  readonly type: string;
  /** For messages and enums: the type's name as written, resolved with `resolveTypeName`. */
  readonly typeName: string;
  readonly proto3Optional?: boolean;
}

export interface EnumValue {
  readonly name: string;
  readonly number: number;
}

/** The full name a descriptor's typeName means, seen from message `from` (protobuf's scoping, outward). */
export function resolveTypeName(def: PackageDefinition, from: string, typeName: string): string {
  const name = typeName.startsWith('.') ? typeName.slice(1) : typeName;
  const parts = from.split('.');
  for (let i = parts.length; i >= 0; i--) {
    const full = [...parts.slice(0, i), name].join('.');
    if (full in def) return full;
  }
  throw new Error(`protobuf type ${typeName} (from ${from}) is not in the package definition`);
}

/** The fields of message `name` (a full name); throws when `def` has no such message. */
export function messageFields(def: PackageDefinition, name: string): readonly FieldDescriptor[] {
  const d = def[name] as { format?: string; type?: { field?: FieldDescriptor[] } } | undefined;
  if (d?.format !== 'Protocol Buffer 3 DescriptorProto') throw new Error(`${name} is not a message`);
  return d.type?.field ?? [];
}

/** The values of enum `name` (a full name); throws when `def` has no such enum. */
export function enumValues(def: PackageDefinition, name: string): readonly EnumValue[] {
  const e = def[name] as { format?: string; type?: { value?: EnumValue[] } } | undefined;
  if (e?.format?.includes('EnumDescriptorProto') !== true) throw new Error(`${name} is not an enum`);
  return e.type?.value ?? [];
}

/**
 * Plans of a definition's messages, each made once: `create` makes an empty plan, `fill` fills it
 * from the message's fields and may ask `planOf` for other messages' plans (a message that contains
 * itself gets the plan being filled).
 */
export function planner<P>(def: PackageDefinition, create: (name: string) => P, fill: (p: P, name: string, fields: readonly FieldDescriptor[], planOf: (name: string) => P) => void): (name: string) => P {
  const plans = new Map<string, P>();
  const planOf = (name: string): P => {
    const known = plans.get(name);
    if (known !== undefined) return known;
    const fields = messageFields(def, name);
    const p = create(name);
    plans.set(name, p);
    fill(p, name, fields, planOf);
    return p;
  };
  return planOf;
}
