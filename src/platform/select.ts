/**
 * The only place that reads `process.platform`: detects the host and loads this OS's plugin list
 * with a dynamic import, so a Windows node never loads Linux code (and the other way round).
 */
import type { CaptureProvider } from '../capture/index.js';
import type { AnyPluginDefinition, OsName } from '../plugin/index.js';
import type { PlatformInfo } from './capabilities.js';
import type { OsDiagnoseModule } from './diagnose.js';

export interface Platform {
  readonly info: PlatformInfo;
  /** Every plugin this OS can run, in the OS list's order. */
  readonly plugins: readonly AnyPluginDefinition[];
  /** Gives memory the process freed back to the system (Linux: glibc's malloc_trim; Windows: nothing). */
  readonly releaseFreeMemory?: () => void;
  /**
   * Drops resident pages of read-only file mappings (binary, libraries) until their next use (Linux:
   * madvise; Windows: not offered). Returns what it dropped.
   */
  readonly releaseColdPages?: () => { mappings: number; bytes: number; refused: number };
}

export function currentOs(): OsName {
  if (process.platform === 'win32') return 'windows';
  if (process.platform === 'linux') return 'linux';
  throw new Error(`unsupported platform ${process.platform}: retina-ts runs on linux and windows`);
}

/** Loads the plugin list of `os` (tests may name an OS other than the host's). */
export async function loadPlugins(os: OsName): Promise<readonly AnyPluginDefinition[]> {
  return (await loadOsModule(os)).plugins;
}

const loadOsModule = async (os: OsName): Promise<{ plugins: readonly AnyPluginDefinition[]; releaseFreeMemory: () => void; releaseColdPages: Platform['releaseColdPages'] }> =>
  os === 'linux' ? import('../plugins/linux/index.js') : import('../plugins/windows/index.js');

export async function detect(os: OsName): Promise<PlatformInfo> {
  if (os === 'linux') return (await import('./linux/detect.js')).detectLinux();
  return (await import('./windows/detect.js')).detectWindows();
}

/** The OS part of `retina-agent diagnose` (`./<os>/diagnose.js`), loaded only on that OS. */
export async function loadDiagnose(os: OsName): Promise<OsDiagnoseModule> {
  return os === 'linux' ? import('./linux/diagnose.js') : import('./windows/diagnose.js');
}

/** The capture provider of `retina-capture` on `os` (`./<os>/capture.js`: tcpdump or pktmon), loaded only on that OS. */
export async function loadCaptureProvider(os: OsName): Promise<CaptureProvider> {
  const mod = os === 'linux' ? await import('./linux/capture.js') : await import('./windows/capture.js');
  return mod.captureProvider();
}

export async function selectPlatform(os: OsName = currentOs()): Promise<Platform> {
  const [info, mod] = await Promise.all([detect(os), loadOsModule(os)]);
  return { info, plugins: mod.plugins, releaseFreeMemory: mod.releaseFreeMemory, ...(mod.releaseColdPages ? { releaseColdPages: mod.releaseColdPages } : {}) };
}
