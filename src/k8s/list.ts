/**
 * A paginated LIST. Each page's items are handed on as they arrive (the caller slims them), so only
 * one page of whole objects is held at a time. An expired continue token starts the list again in one
 * piece; a page whose body exceeds the cap is fetched again half as big (a continue token works with
 * any limit), down to one object per page.
 */
import { ResponseTooLargeError, isApiError, type RestClient } from './rest.js';
import type { KubeList, KubeObject } from './resources.js';

export interface PagedList<T extends KubeObject> {
  readonly client: RestClient;
  readonly path: string;
  readonly query: Readonly<Record<string, string | undefined>>;
  readonly signal: AbortSignal;
  readonly pageSize: number;
  readonly maxBodyBytes?: number | undefined;
  /** The items of one page. */
  onItems(items: readonly T[]): void;
  /** Everything handed on so far is void: the list starts again. */
  onRestart(): void;
  /** A page was over the cap; pages hold `pageSize` objects from now on. */
  onShrink(pageSize: number, e: ResponseTooLargeError): void;
}

/** Lists everything; returns the list's resourceVersion and the page size it ended with. */
export async function listPaged<T extends KubeObject>(o: PagedList<T>): Promise<{ resourceVersion: string; pageSize: number }> {
  let cont: string | undefined;
  let rv = '';
  let pageSize = o.pageSize;
  let limit: number | undefined = pageSize;
  for (;;) {
    let page: KubeList<T>;
    try {
      page = await o.client.request<KubeList<T>>('GET', o.path, { query: { ...o.query, limit, continue: cont }, signal: o.signal, timeoutMs: 60_000, maxBodyBytes: o.maxBodyBytes });
    } catch (e) {
      if (e instanceof ResponseTooLargeError && (limit === undefined || limit > 1)) {
        pageSize = limit === undefined ? pageSize : Math.max(1, Math.floor(limit / 2));
        limit = pageSize;
        o.onShrink(pageSize, e);
        continue;
      }
      if (cont && isApiError(e, 410)) {
        o.onRestart();
        cont = undefined;
        limit = undefined;
        continue;
      }
      throw e;
    }
    rv = page.metadata.resourceVersion ?? rv;
    o.onItems(page.items);
    cont = page.metadata.continue || undefined;
    if (!cont) return { resourceVersion: rv, pageSize };
  }
}
