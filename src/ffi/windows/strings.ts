/**
 * UTF-16 strings that Windows APIs hand back in CoTaskMem (PWSTR* outputs): read and freed in one
 * step, so no caller can forget CoTaskMemFree.
 */
import koffi from '../koffi.js';
import { loadDll } from './libraries.js';

type Free = (p: unknown) => void;
let free: Free | undefined;

function coTaskMemFree(): Free {
  if (!free) free = loadDll('ole32').func('void __stdcall CoTaskMemFree(void *p)') as Free;
  return free;
}

/** A fresh `void*` out-slot for a PWSTR* argument. */
export function outSlot(): [unknown] {
  return [null];
}

/** Reads the UTF-16 string in an out-slot and frees it; '' for NULL. */
export function takeString(slot: [unknown]): string {
  const p = slot[0];
  slot[0] = null;
  if (p === null || p === undefined) return '';
  try {
    return koffi.decode(p, 'char16_t', -1) as string;
  } finally {
    coTaskMemFree()(p);
  }
}

/** Loads ole32 (CoTaskMemFree) now, so a missing library fails at start, not on the first call. */
export function bindStrings(): void {
  coTaskMemFree();
}
