/** The Linux capture provider for `retina-capture` (loaded through select.ts on Linux only). */
import { linuxCaptureProvider } from '../../capture/linux/index.js';
import type { CaptureProvider } from '../../capture/index.js';

export function captureProvider(): CaptureProvider {
  return linuxCaptureProvider();
}
