/**
 * vmcompute.dll `HNSCall` (HNS v1): the per-endpoint counters (`GET /endpointstats/<id>`) and the v1
 * endpoint list (`GET /endpoints/`, whose "Endpoint Port" allocator names the VFP port). The JSON
 * text is returned as is: its u64 counters are parsed without losing precision by the caller.
 */
import { checkHresult } from './errors.js';
import { loadDll } from './libraries.js';
import { bindStrings, outSlot, takeString } from './strings.js';

export interface HnsClient {
  /** HNSCall(method, path, request); the response text. Throws on a failed HRESULT. */
  call(method: string, path: string, request?: string): string;
}

type Fn = (...args: unknown[]) => number;

export function openHns(): HnsClient {
  const lib = loadDll('vmcompute');
  bindStrings();
  const hnsCall = lib.func('int32_t __stdcall HNSCall(const char16_t *method, const char16_t *path, const char16_t *request, _Out_ void **response)') as Fn;
  return {
    call(method, path, request = '') {
      const out = outSlot();
      const hr = hnsCall(method, path, request, out);
      const text = takeString(out);
      checkHresult(`HNSCall(${method} ${path})`, hr, hr < 0 ? text : undefined);
      return text;
    },
  };
}
