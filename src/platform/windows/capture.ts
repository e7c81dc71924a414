/**
 * The Windows capture provider for `retina-capture` (loaded through select.ts on Windows only): pktmon,
 * with the HNS networks and endpoints of `retina-agent diagnose`'s `hns` section as metadata/hns.json.
 */
import type { CaptureProvider } from '../../capture/index.js';
import { windowsCaptureProvider } from '../../capture/windows/index.js';
import { hnsState } from './diagnose.js';

export function captureProvider(): CaptureProvider {
  return windowsCaptureProvider({ hnsState });
}
