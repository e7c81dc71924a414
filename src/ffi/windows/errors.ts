/**
 * Windows failures as errors that name the call and the code: HRESULTs (0x8007xxxx carries a Win32
 * error), Win32 error numbers, and HCN/HNS error records (JSON text returned beside the HRESULT).
 */

/** Win32 errors the callers branch on. */
export const win32 = Object.freeze({ ERROR_NOT_FOUND: 1168, ERROR_INSUFFICIENT_BUFFER: 122, ERROR_FILE_NOT_FOUND: 2, ERROR_NOT_SUPPORTED: 50 });

/**
 * HCN's own HRESULTs the callers branch on (Microsoft's HCN error table, computenetwork.h). Its
 * other "not found" codes (network 0x803B0001, subnet 0x803B0005, switch-port 0x803B0007, …) name
 * something other than the endpoint the call opened, so they stay failures.
 */
export const hcn = Object.freeze({ HCN_E_ENDPOINT_NOT_FOUND: 0x803b0002 });

export function hresultHex(hr: number): string {
  return `0x${(hr >>> 0).toString(16).toUpperCase().padStart(8, '0')}`;
}

/** The Win32 error inside an HRESULT of FACILITY_WIN32 (0x8007xxxx), else undefined. */
export function win32OfHresult(hr: number): number | undefined {
  const u = hr >>> 0;
  return ((u & 0xffff0000) >>> 0) === 0x80070000 ? u & 0xffff : undefined;
}

export class WindowsCallError extends Error {
  override readonly name = 'WindowsCallError';
  constructor(
    /** The API that failed, e.g. HcnOpenEndpoint. */
    readonly call: string,
    /** The HRESULT (signed) or Win32 error number. */
    readonly code: number,
    readonly kind: 'HRESULT' | 'Win32',
    /** The error record's text, when the API returned one. */
    readonly record?: string,
  ) {
    const codeText = kind === 'HRESULT' ? `HRESULT ${hresultHex(code)}` : `Win32 error ${code}`;
    super(`${call} failed: ${codeText}${record ? `: ${recordMessage(record)}` : ''}`);
  }

  /** The Win32 error this failure carries (directly, or inside an HRESULT). */
  get win32(): number | undefined {
    return this.kind === 'Win32' ? this.code : win32OfHresult(this.code);
  }

  /**
   * The object the call named does not exist (any more): HRESULT_FROM_WIN32(ERROR_NOT_FOUND) or file
   * not found, or HCN's own HCN_E_ENDPOINT_NOT_FOUND (0x803B0002: an endpoint deleted during pod churn).
   */
  get notFound(): boolean {
    if (this.kind === 'HRESULT' && this.code >>> 0 === hcn.HCN_E_ENDPOINT_NOT_FOUND) return true;
    return this.win32 === win32.ERROR_NOT_FOUND || this.win32 === win32.ERROR_FILE_NOT_FOUND;
  }
}

/** The human part of an HCN error record (`{"Error":..,"ErrorMessage":..}`), or the text itself. */
export function recordMessage(record: string): string {
  try {
    const doc = JSON.parse(record) as Record<string, unknown>;
    const msg = doc['ErrorMessage'] ?? doc['Error'] ?? doc['Message'];
    if (typeof msg === 'string' && msg) return msg;
  } catch {
    // not JSON: the text is the message
  }
  return record.length > 300 ? `${record.slice(0, 300)}…` : record;
}

/** Throws unless `hr` is a success and `record` empty (hcsshim: a non-empty record is a failure). */
export function checkHresult(call: string, hr: number, record?: string): void {
  if (hr < 0 || (record !== undefined && record.trim() !== '')) throw new WindowsCallError(call, hr, 'HRESULT', record || undefined);
}

/** Throws unless the Win32 return code is 0 (NO_ERROR). */
export function checkWin32(call: string, rc: number): void {
  if (rc !== 0) throw new WindowsCallError(call, rc, 'Win32');
}
