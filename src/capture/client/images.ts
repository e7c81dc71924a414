/**
 * Which image the capture Jobs `kubectl-retina capture create` makes run (the image holds
 * retina-capture): first --image (Linux, and Windows unless --windows-image), then Retina's --debug
 * with RETINA_AGENT_IMAGE, then the agent DaemonSets of the retina-ts chart installed in the cluster
 * (the Linux and the Windows one: the release's own images, so the capture runs the version the
 * agents run), and only when none of these says the built-in default (defaultImages).
 */
import { defaultImages } from '../job.js';
import { CHART_AGENT_SELECTOR, isApiError, type KubeList, type KubeObject, type RestClient } from '../../k8s/index.js';

export { CHART_AGENT_SELECTOR };

/** The agent's container in the chart's DaemonSets (and Retina's name for it). */
const AGENT_CONTAINERS = ['retina-agent', 'retina'];

interface DaemonSetWire extends KubeObject {
  spec?: {
    selector?: { matchLabels?: Record<string, string> };
    template?: { spec?: { nodeSelector?: Record<string, string>; containers?: { name: string; image?: string }[] } };
  };
}

export interface CaptureImages {
  readonly linuxImage: string;
  readonly windowsImage: string;
  /** Where each came from, for the user: "--image", "daemonset ns/name", "default". */
  readonly linuxFrom: string;
  readonly windowsFrom: string;
}

export interface ImageChoice {
  readonly image?: string | undefined;
  readonly windowsImage?: string | undefined;
  readonly debug: boolean;
}

/** The agent images of the chart's release(s) in the cluster, per OS; {} when none is found or we may not list DaemonSets. */
export async function chartAgentImages(client: RestClient): Promise<{ linux?: { image: string; from: string }; windows?: { image: string; from: string } }> {
  let list: KubeList<DaemonSetWire>;
  try {
    list = await client.request<KubeList<DaemonSetWire>>('GET', '/apis/apps/v1/daemonsets', { query: { labelSelector: CHART_AGENT_SELECTOR } });
  } catch (e) {
    if (isApiError(e, 403) || isApiError(e, 404)) return {};
    throw e;
  }
  const out: { linux?: { image: string; from: string }; windows?: { image: string; from: string } } = {};
  const sorted = [...list.items].sort((a, b) => (`${a.metadata.namespace}/${a.metadata.name}` < `${b.metadata.namespace}/${b.metadata.name}` ? -1 : 1));
  for (const ds of sorted) {
    const pod = ds.spec?.template?.spec;
    const os = pod?.nodeSelector?.['kubernetes.io/os'] ?? ds.spec?.selector?.matchLabels?.['kubernetes.io/os'] ?? 'linux';
    const containers = pod?.containers ?? [];
    const image = (containers.find((c) => AGENT_CONTAINERS.includes(c.name)) ?? containers[0])?.image;
    if (!image || (os !== 'linux' && os !== 'windows') || out[os]) continue;
    out[os] = { image, from: `daemonset ${ds.metadata.namespace}/${ds.metadata.name}` };
  }
  return out;
}

export async function captureImages(client: RestClient, choice: ImageChoice, version: string, env: Readonly<Record<string, string | undefined>>): Promise<CaptureImages> {
  const fallback = defaultImages(version, env, choice.debug);
  const debugged = choice.debug && Boolean(env['RETINA_AGENT_IMAGE']);
  const linuxFlag = choice.image ?? (debugged ? fallback.linuxImage : undefined);
  const windowsFlag = choice.windowsImage ?? choice.image ?? (debugged ? fallback.windowsImage : undefined);
  const flagName = (win: boolean): string => (win && choice.windowsImage ? '--windows-image' : choice.image ? '--image' : '--debug and RETINA_AGENT_IMAGE');
  const chart = linuxFlag && windowsFlag ? {} : await chartAgentImages(client);
  return {
    linuxImage: linuxFlag ?? chart.linux?.image ?? fallback.linuxImage,
    windowsImage: windowsFlag ?? chart.windows?.image ?? fallback.windowsImage,
    linuxFrom: linuxFlag ? flagName(false) : chart.linux?.from ?? 'default',
    windowsFrom: windowsFlag ? flagName(true) : chart.windows?.from ?? 'default',
  };
}
