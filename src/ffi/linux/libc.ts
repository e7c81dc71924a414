/**
 * The few libc calls the Linux plugins need (socket, ioctl, close) over koffi, plus native memory.
 * `loadLibc()` loads libc.so.6 when called (from a plugin's start), never at import time.
 */
import koffi from '../koffi.js';

export const AF_INET = 2;
export const SOCK_DGRAM = 2;
export const SOCK_CLOEXEC = 0o2000000;

/** errno values the callers branch on. */
export const errnos = Object.freeze({ EPERM: 1, ENOENT: 2, ENODEV: 19, EINVAL: 22, EOPNOTSUPP: 95 });

/** Native memory that does not move; `view` reads and writes it without copies. */
export interface NativeBuffer {
  readonly size: number;
  readonly view: DataView;
  /** The pointer to pass to native calls. */
  readonly ptr: unknown;
  /** Its address, to store inside another native struct. */
  readonly address: bigint;
  free(): void;
}

export interface Libc {
  /** Returns the fd, or -errno. */
  socket(domain: number, type: number, protocol: number): number;
  /** ioctl(fd, request, ptr); returns 0 or more, or -errno. */
  ioctlPtr(fd: number, request: number, arg: NativeBuffer): number;
  /** Returns 0, or -errno. */
  close(fd: number): number;
  alloc(size: number): NativeBuffer;
  /**
   * Gives free C-heap memory back to the system (glibc `malloc_trim(0)`). libbpf parses the kernel's
   * BTF (megabytes) to load and relocate an object and frees it again; without a trim those pages
   * stay in the agent's RSS.
   */
  trimHeap(): void;
  /** sizeof(void *) on this machine. */
  readonly pointerSize: number;
}

let cached: Libc | undefined;
let library: koffi.IKoffiLib | undefined;

/** The one koffi handle on libc.so.6 that every binding in this folder declares its calls on. */
export function libcLibrary(): koffi.IKoffiLib {
  if (library) return library;
  try {
    library = koffi.load('libc.so.6');
  } catch (e) {
    throw new Error('cannot load libc.so.6', { cause: e });
  }
  keepLargeBlocksOffTheHeap(library);
  return library;
}

/** glibc's mallopt parameter for the size from which malloc maps a block of its own. */
const M_MMAP_THRESHOLD = -3;
/** Blocks from this size on are mapped on their own: glibc's starting value (it would raise it up to 32 MiB). */
export const MMAP_THRESHOLD = 128 << 10;

/**
 * Fixes glibc's mmap threshold at its starting 128 KiB (a set value also stops its growth). By
 * default glibc raises the threshold to the size of each mapped block freed, so once libbpf has
 * parsed and freed the kernel's BTF (megabytes), later large blocks land on the C heap; in about half
 * the runs the idle agent's [heap] then kept 8 MB resident instead of 2-3 (the malloc_trim after
 * loading an object did not return it). Mapped blocks go back to the system when freed. Set before
 * libbpf loads (it declares its calls on this handle); a libc without mallopt (musl) is left as is.
 */
function keepLargeBlocksOffTheHeap(lib: koffi.IKoffiLib): void {
  try {
    lib.func('int mallopt(int param, int value)')(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
  } catch {
    // not glibc: its allocator has its own policy
  }
}

/** Loads libc once per process; throws (with the cause) when it cannot be loaded. */
/**
 * glibc `malloc_trim(0)`: free C-heap pages back to the system. Freed blocks in the middle of glibc's
 * arenas otherwise stay resident: each scrape's and each interval's short-lived native buffers (file
 * reads, koffi's call frames, the HTTP parser) left a scraped agent's anonymous RSS a few MB higher.
 */
export const trimHeap = (): void => loadLibc().trimHeap();

export function loadLibc(): Libc {
  if (cached) return cached;
  const lib = libcLibrary();
  const socket = lib.func('int socket(int domain, int type, int protocol)');
  const ioctl = lib.func('int ioctl(int fd, unsigned long request, ...)');
  const close = lib.func('int close(int fd)');
  const mallocTrim = lib.func('int malloc_trim(size_t pad)');
  const checked = (rc: number): number => (rc < 0 ? -koffi.errno() : rc);
  cached = {
    pointerSize: koffi.sizeof('void *'),
    socket: (domain, type, protocol) => checked(socket(domain, type, protocol) as number),
    ioctlPtr: (fd, request, arg) => checked(ioctl(fd, request, 'void *', arg.ptr) as number),
    close: (fd) => checked(close(fd) as number),
    trimHeap: () => void mallocTrim(0),
    alloc(size) {
      const ptr: unknown = koffi.alloc('uint8_t', size);
      const view = new DataView(koffi.view(ptr, size));
      let freed = false;
      return {
        size, view, ptr,
        address: koffi.address(ptr),
        free() {
          if (freed) return;
          freed = true;
          koffi.free(ptr);
        },
      };
    },
  };
  return cached;
}

/** The symbolic name of an errno value, for messages ("EOPNOTSUPP"), or "errno N". */
export function errnoName(errno: number): string {
  const ours = Object.entries(errnos).find(([, v]) => v === errno);
  if (ours) return ours[0];
  const hit = Object.entries(koffi.os.errno).find(([, v]) => v === errno);
  return hit ? hit[0] : `errno ${errno}`;
}
