/** koffi for the Windows bindings: its native module alone (see ../koffi-native.ts for why). */
import type koffiModule from 'koffi';
import { loadKoffiNative } from '../koffi-native.js';

const koffi: typeof koffiModule = loadKoffiNative<typeof koffiModule>();
// The koffi.* types the bindings name, beside the value (types only, so no runtime namespace).
// eslint-disable-next-line @typescript-eslint/no-namespace
declare namespace koffi {
  type IKoffiCType = koffiModule.IKoffiCType;
  type IKoffiLib = koffiModule.IKoffiLib;
}
export default koffi;
