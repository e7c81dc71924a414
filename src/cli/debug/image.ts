/**
 * The shell image `kubectl retina shell` and `bpftrace` run (Retina's rules, and ours): --image IMAGE,
 * else --retina-shell-image-repo and --retina-shell-image-version, each from its flag, else from
 * RETINA_SHELL_IMAGE_REPO / RETINA_SHELL_IMAGE_VERSION, else ghcr.io/retina-ts/retina-ts-shell and the
 * plugin's version (`make image` builds it: build/image/retina-ts-shell-<arch>.oci.tar).
 */
import type { Flags } from '../args.js';
import { version } from '../command.js';

export const DEFAULT_SHELL_IMAGE_REPO = 'ghcr.io/retina-ts/retina-ts-shell';

export const IMAGE_FLAGS = { image: undefined, 'retina-shell-image-repo': undefined, 'retina-shell-image-version': undefined } as const;

export const IMAGE_USAGE = `Image: --image IMAGE, or --retina-shell-image-repo REPO (env RETINA_SHELL_IMAGE_REPO; default ${DEFAULT_SHELL_IMAGE_REPO})
  and --retina-shell-image-version TAG (env RETINA_SHELL_IMAGE_VERSION; default the plugin's version)`;

export function shellImage(f: Flags, env: NodeJS.ProcessEnv): string {
  const image = f.str('image');
  if (image) return image;
  const repo = f.str('retina-shell-image-repo') || env['RETINA_SHELL_IMAGE_REPO'] || DEFAULT_SHELL_IMAGE_REPO;
  const tag = f.str('retina-shell-image-version') || env['RETINA_SHELL_IMAGE_VERSION'] || version();
  return `${repo}:${tag}`;
}
