/**
 * `hubble observe --cel-expression` (FlowFilter.experimental.cel_expression, Hubble 1.19): CEL
 * expressions over the `_flow` variable (a flow.Flow, proto field names; container `flow`, so
 * `Verdict.DROPPED` names the enum value), as Cilium's pkg/hubble/filters/cel_expression.go declares
 * them. A filter's expressions are OR'd; an expression that fails on a flow (an evaluation error)
 * does not match it, as in Hubble.
 *
 * The evaluator is @bufbuild/cel (Buf's CEL for ECMAScript, tested against the cel-spec conformance
 * suite; its `matches` runs @bufbuild/re2, a linear-time RE2, so no pattern can backtrack the event
 * loop away). It evaluates protobuf-es messages: a flow is encoded with our frame encoder
 * (encode.ts) and decoded against flow.proto's descriptors, which are the ones proto-loader already
 * holds (their type names made absolute, as protobufjs leaves them relative).
 *
 * What Hubble checks when it compiles an expression (cel-go's type checker) and @bufbuild/cel does
 * not export, is checked here before the expression is accepted, each refusal naming the problem
 * (INVALID_ARGUMENT):
 * - the expression parses, and is at most `maxBytes` long;
 * - every field selected from `_flow` exists in flow.Flow (a field of Hubble's flow.Flow that this
 *   agent's flows never carry, such as `ethernet`, is refused saying so, not silently false);
 * - it yields a bool on sample flows (a TCP flow between two pods, a DNS answer, a kernel drop) and
 *   does not fail on every one of them (e.g. `_flow.node_name + 1`);
 * - its cost is bounded: at most `maxNodes` AST nodes and `maxNesting` nested comprehensions
 *   (`exists`, `all`, `map`, `filter`). CEL has no loops or recursion, so the work per flow is at
 *   most the nodes times the longest list of the flow (labels, names) to the power of the nesting:
 *   bench/hubble/cel.bench.ts measures the worst accepted expression.
 */
import type { PackageDefinition } from '@grpc/proto-loader';
import { celEnv, isCelError, objectType, parse, plan, type CelEnv } from '@bufbuild/cel';

type Expr = ReturnType<typeof parse>['expr'];
import { createFileRegistry, fromBinary, type DescMessage, type Registry } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, file_google_protobuf_timestamp, file_google_protobuf_wrappers, type FileDescriptorProto, type DescriptorProto } from '@bufbuild/protobuf/wkt';
import { FilterError, type HubbleObject } from '../../flow/hubble/index.js';
import { HUBBLE_ONLY_FIELDS } from './field-mask.js';

export interface CelLimits {
  /** Bytes of one expression. */
  readonly maxBytes: number;
  /** AST nodes of one expression. */
  readonly maxNodes: number;
  /** Comprehensions (exists, all, exists_one, map, filter) nested in one another. */
  readonly maxNesting: number;
  /** Expressions in one request. */
  readonly maxExpressions: number;
}

export const DEFAULT_CEL_LIMITS: CelLimits = Object.freeze({ maxBytes: 2048, maxNodes: 256, maxNesting: 2, maxExpressions: 16 });

/** A compiled filter's predicate over a Hubble flow object (src/flow/hubble's filter contract). */
export type CelPredicate = (flow: Readonly<Record<string, unknown>>) => boolean;

/** Compiles one FlowFilter's cel_expression list (`path` names it in errors); throws FilterError. */
export type CelCompiler = (exprs: readonly string[], path: string) => CelPredicate;

const WELL_KNOWN: Readonly<Record<string, typeof file_google_protobuf_timestamp>> = {
  'google/protobuf/timestamp.proto': file_google_protobuf_timestamp,
  'google/protobuf/wrappers.proto': file_google_protobuf_wrappers,
};

/** protobufjs writes type names relative to their scope ('Verdict'); protobuf-es wants them absolute ('.flow.Verdict'). */
function qualify(fd: FileDescriptorProto): void {
  const pkg = fd.package ? `.${fd.package}` : '';
  const known = new Set<string>();
  const collect = (scope: string, msgs: readonly DescriptorProto[], enums: readonly { name: string }[]): void => {
    for (const e of enums) known.add(`${scope}.${e.name}`);
    for (const m of msgs) {
      known.add(`${scope}.${m.name}`);
      collect(`${scope}.${m.name}`, m.nestedType, m.enumType);
    }
  };
  collect(pkg, fd.messageType, fd.enumType);
  const fix = (scope: string, msgs: readonly DescriptorProto[]): void => {
    for (const m of msgs) {
      const s = `${scope}.${m.name}`;
      for (const f of m.field) {
        if (f.typeName === '' || f.typeName.startsWith('.')) continue;
        let found: string | undefined;
        for (let sc = s; found === undefined; sc = sc.slice(0, sc.lastIndexOf('.'))) {
          if (known.has(`${sc}.${f.typeName}`)) found = `${sc}.${f.typeName}`;
          if (sc === '') break;
        }
        f.typeName = found ?? `.${f.typeName}`;
      }
      fix(s, m.nestedType);
    }
  };
  fix(pkg, fd.messageType);
}

/** flow.Flow's protobuf-es descriptor and its registry, from the package definition proto-loader made. */
export function flowDescriptor(def: PackageDefinition): { flow: DescMessage; registry: Registry } {
  let flowFile: FileDescriptorProto | undefined;
  for (const v of Object.values(def)) {
    for (const b of (v as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos ?? []) {
      const fd = fromBinary(FileDescriptorProtoSchema, b);
      if (fd.package === 'flow' && fd.messageType.some((m) => m.name === 'Flow')) flowFile = fd;
    }
    if (flowFile) break;
  }
  if (flowFile === undefined) throw new Error('the Hubble protos hold no flow.Flow');
  flowFile.dependency = Object.keys(WELL_KNOWN);
  qualify(flowFile);
  const registry = createFileRegistry(flowFile, (name) => WELL_KNOWN[name]);
  const flow = registry.getMessage('flow.Flow');
  if (flow === undefined) throw new Error('flow.Flow is not in flow.proto');
  return { flow, registry };
}

interface Shape {
  nodes: number;
  nesting: number;
}

/** Counts nodes and comprehension nesting; checks each `_flow.a.b` selection against flow.Flow. */
function inspect(e: Expr, flow: DescMessage, fail: (problem: string) => never, depth = 0, shape: Shape = { nodes: 0, nesting: 0 }): Shape {
  shape.nodes++;
  shape.nesting = Math.max(shape.nesting, depth);
  const k = e.exprKind;
  switch (k.case) {
    case 'selectExpr': {
      const chain = selection(e);
      if (chain !== undefined) checkChain(chain, flow, fail);
      if (k.value.operand) inspect(k.value.operand, flow, fail, depth, shape);
      break;
    }
    case 'callExpr':
      if (k.value.target) inspect(k.value.target, flow, fail, depth, shape);
      for (const a of k.value.args) inspect(a, flow, fail, depth, shape);
      break;
    case 'listExpr':
      for (const x of k.value.elements) inspect(x, flow, fail, depth, shape);
      break;
    case 'structExpr':
      for (const x of k.value.entries) {
        if (x.keyKind.case === 'mapKey') inspect(x.keyKind.value, flow, fail, depth, shape);
        if (x.value) inspect(x.value, flow, fail, depth, shape);
      }
      break;
    case 'comprehensionExpr': {
      const c = k.value;
      // The macro's range is evaluated once, outside its loop; the rest runs once per element.
      if (c.iterRange) inspect(c.iterRange, flow, fail, depth, shape);
      for (const x of [c.accuInit, c.loopCondition, c.loopStep, c.result]) if (x) inspect(x, flow, fail, depth + 1, shape);
      break;
    }
    default:
      break;
  }
  return shape;
}

/** `_flow.a.b.c` → ['a', 'b', 'c'] (the chain this select ends), or undefined when not rooted at `_flow`. */
function selection(e: Expr): string[] | undefined {
  const out: string[] = [];
  let cur: Expr | undefined = e;
  while (cur?.exprKind.case === 'selectExpr') {
    out.unshift(cur.exprKind.value.field);
    cur = cur.exprKind.value.operand;
  }
  return cur?.exprKind.case === 'identExpr' && cur.exprKind.value.name === '_flow' ? out : undefined;
}

function checkChain(chain: readonly string[], flow: DescMessage, fail: (problem: string) => never): void {
  let msg: DescMessage | undefined = flow;
  for (let i = 0; i < chain.length && msg !== undefined; i++) {
    const name = chain[i] as string;
    const f: DescMessage['fields'][number] | undefined = msg.fields.find((x) => x.name === name);
    const path = ['_flow', ...chain.slice(0, i + 1)].join('.');
    if (f === undefined) {
      const top = i === 0 ? name : `${chain[0]}.${name}`;
      if (HUBBLE_ONLY_FIELDS.has(top)) fail(`${path}: this agent's flows never carry ${msg.typeName}.${name}`);
      fail(`${path}: ${msg.typeName} has no field ${name}`);
    }
    msg = f.fieldKind === 'message' && f.message.typeName.startsWith('flow.') ? f.message : undefined;
  }
}

export interface CelCompilerOptions {
  readonly def: PackageDefinition;
  /** A Hubble flow object as flow.Flow's protobuf bytes (encode.ts). */
  readonly encodeFlow: (flow: HubbleObject) => Uint8Array;
  /** Flows every accepted expression must yield a bool on (not fail on all of them). */
  readonly samples: readonly HubbleObject[];
  readonly limits?: CelLimits;
}

export function createCelCompiler(o: CelCompilerOptions): CelCompiler {
  const limits = o.limits ?? DEFAULT_CEL_LIMITS;
  const { flow: Flow, registry } = flowDescriptor(o.def);
  const env: CelEnv = celEnv({ namespace: 'flow', registry, variables: { _flow: objectType(Flow) } });
  const decode = (flow: HubbleObject): ReturnType<typeof fromBinary> => fromBinary(Flow, o.encodeFlow(flow));
  const samples = o.samples.map(decode);

  return (exprs, path) => {
    if (exprs.length > limits.maxExpressions) throw new FilterError(path, `${exprs.length} CEL expressions, more than the limit of ${limits.maxExpressions}`);
    const programs = exprs.map((src, i) => {
      const at = `${path}[${i}]`;
      const fail = (problem: string): never => {
        throw new FilterError(at, problem);
      };
      if (typeof src !== 'string') fail('must be a string');
      const bytes = Buffer.byteLength(src);
      if (bytes > limits.maxBytes) fail(`CEL expression of ${bytes} bytes, more than the limit of ${limits.maxBytes} (too costly)`);
      let ast: ReturnType<typeof parse>;
      try {
        ast = parse(src);
      } catch (e) {
        return fail(`invalid CEL expression: ${(e as Error).message}`);
      }
      const shape = inspect(ast.expr, Flow, fail);
      if (shape.nodes > limits.maxNodes) fail(`CEL expression of ${shape.nodes} nodes, more than the limit of ${limits.maxNodes} (too costly)`);
      if (shape.nesting > limits.maxNesting) fail(`CEL expression nests ${shape.nesting} comprehensions, more than the limit of ${limits.maxNesting} (too costly)`);
      let run: ReturnType<typeof plan>;
      try {
        run = plan(env, ast);
      } catch (e) {
        return fail(`invalid CEL expression: ${(e as Error).message}`);
      }
      let failure: string | undefined;
      let yielded = false;
      for (const s of samples) {
        const r = run({ _flow: s });
        if (isCelError(r)) failure ??= r.message;
        else if (typeof r !== 'boolean') fail(`a CEL filter must yield a bool, this one yields ${typeof r === 'object' && r !== null ? 'a value of another type' : typeof r}`);
        else yielded = true;
      }
      if (!yielded && failure !== undefined) fail(`invalid CEL expression: ${failure}`);
      return run;
    });
    return (flow) => {
      let msg: ReturnType<typeof decode>;
      try {
        msg = decode(flow as HubbleObject);
      } catch {
        return false;
      }
      for (const run of programs) if (run({ _flow: msg }) === true) return true;
      return false;
    };
  };
}
