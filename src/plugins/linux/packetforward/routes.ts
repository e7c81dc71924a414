/** The interfaces of the default routes, from /proc/net/route and /proc/net/ipv6_route (pure parsers + reader). */
import { readFileSync } from 'node:fs';

/** /proc/net/route: "Iface Destination Gateway Flags ... Mask ..."; a default route has destination and mask 0. */
export function defaultRouteInterfacesV4(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const [iface, dest, , flags, , , , mask] = f;
    const up = (parseInt(flags as string, 16) & 1) === 1;
    if (up && dest === '00000000' && mask === '00000000' && iface !== 'lo' && !out.includes(iface as string)) out.push(iface as string);
  }
  return out;
}

/** /proc/net/ipv6_route: dest(32 hex) plen src splen nexthop metric refcnt use flags iface. */
export function defaultRouteInterfacesV6(text: string): string[] {
  const out: string[] = [];
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 10) continue;
    const iface = f[9] as string;
    const flags = parseInt(f[8] as string, 16);
    const RTF_UP = 0x1;
    const RTF_REJECT = 0x200;
    if (/^0{32}$/.test(f[0] as string) && f[1] === '00' && (flags & RTF_UP) && !(flags & RTF_REJECT) && iface !== 'lo' && !out.includes(iface)) out.push(iface);
  }
  return out;
}

/** Default-route interfaces of this network namespace, IPv4 first; unreadable files count as none. */
export function defaultRouteInterfaces(read: (path: string) => string = (p) => readFileSync(p, 'utf8')): string[] {
  const tryRead = (p: string): string => {
    try {
      return read(p);
    } catch {
      return '';
    }
  };
  const out = defaultRouteInterfacesV4(tryRead('/proc/net/route'));
  for (const i of defaultRouteInterfacesV6(tryRead('/proc/net/ipv6_route'))) if (!out.includes(i)) out.push(i);
  return out;
}
