/**
 * computenetwork.dll (HCN v2): enumerate, open, query and close endpoints. Every PWSTR output is
 * freed with CoTaskMemFree; every HRESULT and error record becomes a WindowsCallError naming the call.
 */
import koffi from '../koffi.js';
import { checkHresult } from './errors.js';
import { parseGuid, type GuidStruct } from './guid.js';
import { loadDll } from './libraries.js';
import { bindStrings, outSlot, takeString } from './strings.js';

/** The query Retina's hnsstats uses: attached-sharing endpoints (State 3), schema 2.0. */
export const ATTACHED_SHARING_QUERY = JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0, Filter: JSON.stringify({ State: 3 }) });
/** Every endpoint (diagnose). */
export const ALL_ENDPOINTS_QUERY = JSON.stringify({ SchemaVersion: { Major: 2, Minor: 0 }, Flags: 0, Filter: '' });

export interface HcnClient {
  /** The endpoint IDs the query selects (the raw JSON array text of HcnEnumerateEndpoints). */
  enumerateEndpoints(query: string): string;
  /** Opens, queries and closes one endpoint; the HostComputeEndpoint JSON text. */
  endpointProperties(id: string, query: string): string;
}

type Fn = (...args: unknown[]) => number;

let GUID: koffi.IKoffiCType | undefined;
function guidType(): koffi.IKoffiCType {
  GUID ??= koffi.struct('HCN_GUID', { Data1: 'uint32_t', Data2: 'uint16_t', Data3: 'uint16_t', Data4: koffi.array('uint8_t', 8) });
  return GUID;
}

/** Loads computenetwork.dll and binds its calls (throws naming the DLL or the missing function). */
export function openHcn(): HcnClient {
  const lib = loadDll('computenetwork');
  bindStrings();
  guidType();
  const enumerate = lib.func('int32_t __stdcall HcnEnumerateEndpoints(const char16_t *query, _Out_ void **endpoints, _Out_ void **errorRecord)') as Fn;
  const open = lib.func('int32_t __stdcall HcnOpenEndpoint(const HCN_GUID *id, _Out_ void **endpoint, _Out_ void **errorRecord)') as Fn;
  const query = lib.func('int32_t __stdcall HcnQueryEndpointProperties(void *endpoint, const char16_t *query, _Out_ void **properties, _Out_ void **errorRecord)') as Fn;
  const close = lib.func('int32_t __stdcall HcnCloseEndpoint(void *endpoint)') as Fn;
  return {
    enumerateEndpoints(q) {
      const out = outSlot();
      const err = outSlot();
      const hr = enumerate(q, out, err);
      const result = takeString(out);
      checkHresult('HcnEnumerateEndpoints', hr, takeString(err));
      return result;
    },
    endpointProperties(id, q) {
      const guid: GuidStruct = parseGuid(id);
      const handle = outSlot();
      const err = outSlot();
      const hr = open(guid, handle, err);
      checkHresult(`HcnOpenEndpoint(${id})`, hr, takeString(err));
      try {
        const props = outSlot();
        const qerr = outSlot();
        const qhr = query(handle[0], q, props, qerr);
        const text = takeString(props);
        checkHresult(`HcnQueryEndpointProperties(${id})`, qhr, takeString(qerr));
        return text;
      } finally {
        close(handle[0]);
      }
    },
  };
}
