/**
 * Creates or updates the retina.sh CRDs from the chart's crds folder (the same YAML Helm installs),
 * then waits until the API server reports them Established.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parse as parseYaml } from 'yaml';
import { collectionPath, isApiError, objectPath, resources, type RestClient } from '../k8s/index.js';
import type { Logger } from '../log/index.js';

interface Crd {
  metadata: { name: string; resourceVersion?: string };
  spec: { names: { kind: string } };
  status?: { conditions?: { type: string; status: string }[] };
}

/** Reads every CRD in `dir` (charts/retina/crds). */
export async function readCrds(dir: string): Promise<Crd[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml') || f.endsWith('.yml')).sort();
  const out: Crd[] = [];
  for (const f of files) out.push(parseYaml(await readFile(join(dir, f), 'utf8'), { maxAliasCount: 1000 }) as Crd);
  return out;
}

export async function installCrds(o: { client: RestClient; dir: string; log: Logger; only?: readonly string[]; timeoutMs?: number; signal?: AbortSignal }): Promise<string[]> {
  const crds = (await readCrds(o.dir)).filter((c) => !o.only || o.only.includes(c.spec.names.kind));
  for (const crd of crds) {
    const path = objectPath(resources.crds, undefined, crd.metadata.name);
    try {
      const cur = await o.client.request<Crd>('GET', path);
      await o.client.request('PUT', path, { body: { ...crd, metadata: { ...crd.metadata, resourceVersion: cur.metadata.resourceVersion } } });
      o.log.info('updated CRD', { name: crd.metadata.name });
    } catch (e) {
      if (!isApiError(e, 404)) throw new Error(`installing CRD ${crd.metadata.name}: ${(e as Error).message}`, { cause: e });
      await o.client.request('POST', collectionPath(resources.crds), { body: crd });
      o.log.info('created CRD', { name: crd.metadata.name });
    }
  }
  const deadline = Date.now() + (o.timeoutMs ?? 30_000);
  for (const crd of crds) {
    for (;;) {
      const cur = await o.client.request<Crd>('GET', objectPath(resources.crds, undefined, crd.metadata.name));
      if (cur.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${crd.metadata.name} not Established in time`);
      // A timer that keeps the process alive: systemClock's are unref'd, and at the operator's start
      // nothing else holds the event loop, so a CRD not yet Established at the first look (a new
      // kind: RetinaEndpointSlice) let the process end mid-install (a test saw "Promise resolution
      // is still pending but the event loop has already resolved").
      await delay(200, undefined, o.signal ? { signal: o.signal } : {}).catch(() => undefined);
      if (o.signal?.aborted) throw new Error(`CRD ${crd.metadata.name}: install aborted`);
    }
  }
  return crds.map((c) => c.metadata.name);
}
