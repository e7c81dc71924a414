/**
 * The driver behind a network interface (what `ethtool -i` shows as "driver"), through one
 * SIOCETHTOOL ETHTOOL_GDRVINFO ioctl on an AF_INET datagram socket. Used to tell pod veths from
 * other interfaces; one call per interface that appears, never per packet.
 */
import { endianness } from 'node:os';
import { AF_INET, SOCK_CLOEXEC, SOCK_DGRAM, loadLibc, type Libc, type NativeBuffer } from './libc.js';

const LE = endianness() === 'LE';
const SIOCETHTOOL = 0x8946;
const ETHTOOL_GDRVINFO = 0x03;
const IFNAMSIZ = 16;
const IFREQ_SIZE = 40;
/** struct ethtool_drvinfo: u32 cmd; char driver[32]; version[32]; fw_version[32]; bus_info[32]; erom_version[32]; reserved2[12]; 5 x u32. */
const DRVINFO_SIZE = 196;

export interface DriverProbe extends Disposable {
  /** The driver name ("veth", "virtio_net", ...), or undefined when the interface is gone or has none. */
  driver(ifname: string): string | undefined;
}

/** Opens the socket the probes use; throws when it cannot (call from start). */
export function interfaceDriver(libc: Libc = loadLibc()): DriverProbe {
  const fd = libc.socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw new Error(`socket(AF_INET, SOCK_DGRAM) failed: errno ${-fd}`);
  const ifreq: NativeBuffer = libc.alloc(IFREQ_SIZE);
  const info: NativeBuffer = libc.alloc(DRVINFO_SIZE);
  let open = true;
  return {
    driver(ifname) {
      const name = Buffer.from(ifname, 'utf8');
      if (!open || name.length === 0 || name.length >= IFNAMSIZ) return undefined;
      const req = new Uint8Array(ifreq.view.buffer, ifreq.view.byteOffset, IFREQ_SIZE);
      req.fill(0);
      req.set(name, 0);
      if (libc.pointerSize === 8) ifreq.view.setBigUint64(IFNAMSIZ, info.address, LE);
      else ifreq.view.setUint32(IFNAMSIZ, Number(info.address), LE);
      const bytes = new Uint8Array(info.view.buffer, info.view.byteOffset, DRVINFO_SIZE);
      bytes.fill(0);
      info.view.setUint32(0, ETHTOOL_GDRVINFO, LE);
      if (libc.ioctlPtr(fd, SIOCETHTOOL, ifreq) < 0) return undefined;
      const drv = bytes.subarray(4, 36);
      const end = drv.indexOf(0);
      const s = Buffer.from(drv.subarray(0, end < 0 ? 32 : end)).toString('utf8');
      return s || undefined;
    },
    [Symbol.dispose]() {
      if (!open) return;
      open = false;
      libc.close(fd);
      ifreq.free();
      info.free();
    },
  };
}
