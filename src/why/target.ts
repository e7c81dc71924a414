/**
 * What `kubectl retina why SRC DST[:PORT]` is given, read without the API: a pod (`ns/name`,
 * `pod/ns/name`, or `name` in the namespace of -n), a Service (`svc/ns/name`, `svc/name`), an IP
 * (IPv6 with a port as `[addr]:port`), or a DNS name (anything with a dot that is no IP). A bad one
 * is a TargetSpecError naming the argument.
 */
import { isIP } from 'node:net';

export type TargetSpec =
  | { readonly kind: 'pod'; readonly namespace: string; readonly name: string; readonly port?: number }
  | { readonly kind: 'service'; readonly namespace: string; readonly name: string; readonly port?: number }
  | { readonly kind: 'ip'; readonly ip: string; readonly port?: number }
  | { readonly kind: 'name'; readonly name: string; readonly port?: number };

export class TargetSpecError extends Error {
  override readonly name = 'TargetSpecError';
}

const POD_KINDS = new Set(['pod', 'pods', 'po']);
const SERVICE_KINDS = new Set(['svc', 'service', 'services']);
/** A Kubernetes object name (DNS-1123 subdomain, lower case). */
const OBJECT_NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
/** A DNS name as a query names it (labels of letters, digits, hyphens, underscores), optionally absolute. */
const DNS_NAME = /^(?=.{1,254}$)([A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?\.)+[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?\.?$/;

function port(text: string, what: string): number {
  const n = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= 65_535)) throw new TargetSpecError(`${what}: port ${JSON.stringify(text)} is not a number from 1 to 65535`);
  return n;
}

/** `text` without its `:PORT`, and the port (IPv6 needs brackets to carry one). */
function splitPort(text: string, what: string): { rest: string; port: number | undefined } {
  const bracket = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
  if (bracket) return { rest: bracket[1] as string, port: bracket[2] === undefined ? undefined : port(bracket[2], what) };
  if (isIP(text) === 6) return { rest: text, port: undefined };
  const i = text.lastIndexOf(':');
  if (i < 0) return { rest: text, port: undefined };
  return { rest: text.slice(0, i), port: port(text.slice(i + 1), what) };
}

function objectName(name: string, what: string): string {
  if (!OBJECT_NAME.test(name) || name.length > 253) throw new TargetSpecError(`${what}: ${JSON.stringify(name)} is not a Kubernetes name`);
  return name;
}

/**
 * Reads one argument. `what` names it in errors (`SRC`, `DST`); `namespace` is where a name without
 * one is looked for; `allowPort`: only DST may carry a port.
 */
export function parseTarget(text: string, what: string, namespace: string, allowPort: boolean): TargetSpec {
  if (text.trim() === '') throw new TargetSpecError(`${what} is empty`);
  const { rest, port: p } = splitPort(text.trim(), what);
  if (p !== undefined && !allowPort) throw new TargetSpecError(`${what}: only the destination takes a :PORT`);
  const withPort = <T extends object>(t: T): T & { port?: number } => (p === undefined ? t : { ...t, port: p });
  if (isIP(rest)) return withPort({ kind: 'ip' as const, ip: rest });
  const parts = rest.split('/');
  if (parts.length === 3 || (parts.length === 2 && (POD_KINDS.has(parts[0] as string) || SERVICE_KINDS.has(parts[0] as string)))) {
    const [kind, ns, name] = parts.length === 3 ? parts as [string, string, string] : [parts[0] as string, namespace, parts[1] as string];
    if (POD_KINDS.has(kind)) return withPort({ kind: 'pod' as const, namespace: objectName(ns, what), name: objectName(name, what) });
    if (SERVICE_KINDS.has(kind)) return withPort({ kind: 'service' as const, namespace: objectName(ns, what), name: objectName(name, what) });
    throw new TargetSpecError(`${what}: ${JSON.stringify(kind)} is not pod or svc (want pod/NS/NAME, svc/NS/NAME, NS/NAME, an IP or a DNS name)`);
  }
  if (parts.length === 2) return withPort({ kind: 'pod' as const, namespace: objectName(parts[0] as string, what), name: objectName(parts[1] as string, what) });
  if (parts.length > 3) throw new TargetSpecError(`${what}: ${JSON.stringify(text)} has too many slashes (want pod/NS/NAME, svc/NS/NAME, NS/NAME, an IP or a DNS name)`);
  if (rest.includes('.')) {
    if (!DNS_NAME.test(rest)) throw new TargetSpecError(`${what}: ${JSON.stringify(rest)} is neither an IP nor a DNS name`);
    return withPort({ kind: 'name' as const, name: rest.replace(/\.$/, '').toLowerCase() });
  }
  return withPort({ kind: 'pod' as const, namespace, name: objectName(rest, what) });
}

/** How a target is written back in messages. */
export function targetText(t: TargetSpec): string {
  const base = t.kind === 'pod' ? `pod ${t.namespace}/${t.name}` : t.kind === 'service' ? `service ${t.namespace}/${t.name}` : t.kind === 'ip' ? t.ip : `name ${t.name}`;
  return t.port === undefined ? base : `${base} port ${t.port}`;
}
