/**
 * x64 layouts of the iphlpapi structs, as koffi types (explicit widths only: koffi `long` is 32-bit
 * on Windows and 64-bit on Linux). Built lazily (koffi types are process-global) and checked
 * against a mingw `offsetof` dump (test/windows/layout).
 */
import koffi from '../koffi.js';

const u32 = 'uint32_t';
const u64 = 'uint64_t';
const names = (list: string, type: string): Record<string, string> => Object.fromEntries(list.split(' ').map((n) => [n, type]));

export const TCPSTATS_FIELDS = 'dwRtoAlgorithm dwRtoMin dwRtoMax dwMaxConn dwActiveOpens dwPassiveOpens dwAttemptFails dwEstabResets dwCurrEstab dwInSegs dwOutSegs dwRetransSegs dwInErrs dwOutRsts dwNumConns'.split(' ');
export const UDPSTATS_FIELDS = 'dwInDatagrams dwNoPorts dwInErrors dwOutDatagrams dwNumAddrs'.split(' ');
export const IPSTATS_FIELDS = ('dwForwarding dwDefaultTTL dwInReceives dwInHdrErrors dwInAddrErrors dwForwDatagrams dwInUnknownProtos dwInDiscards dwInDelivers ' +
  'dwOutRequests dwRoutingDiscards dwOutDiscards dwOutNoRoutes dwReasmTimeout dwReasmReqds dwReasmOks dwReasmFails dwFragOks dwFragFails dwFragCreates dwNumIf dwNumAddr dwNumRoutes').split(' ');
/** The u64 counters of MIB_IF_ROW2, in struct order. */
export const IF_COUNTERS = ('InOctets InUcastPkts InNUcastPkts InDiscards InErrors InUnknownProtos InUcastOctets InMulticastOctets InBroadcastOctets ' +
  'OutOctets OutUcastPkts OutNUcastPkts OutDiscards OutErrors OutUcastOctets OutMulticastOctets OutBroadcastOctets OutQLen').split(' ');

/** Where the rows start in MIB_IF_TABLE2, MIB_TCPTABLE2 and MIB_TCP6TABLE2 (after the u32 count, aligned). */
export const TABLE_ROWS = Object.freeze({ MIB_IF_TABLE2: 8, MIB_TCPTABLE2: 4, MIB_TCP6TABLE2: 4 });

export interface IphlpTypes {
  readonly GUID: koffi.IKoffiCType;
  readonly MIB_IF_ROW2: koffi.IKoffiCType;
  readonly MIB_TCPSTATS: koffi.IKoffiCType;
  readonly MIB_TCPSTATS2: koffi.IKoffiCType;
  readonly MIB_UDPSTATS: koffi.IKoffiCType;
  readonly MIB_IPSTATS: koffi.IKoffiCType;
  readonly MIB_TCPROW2: koffi.IKoffiCType;
  readonly MIB_TCP6ROW2: koffi.IKoffiCType;
}

let types: IphlpTypes | undefined;

export function iphlpTypes(): IphlpTypes {
  if (types) return types;
  const GUID = koffi.struct('IPHLP_GUID', { Data1: u32, Data2: 'uint16_t', Data3: 'uint16_t', Data4: koffi.array('uint8_t', 8) });
  types = {
    GUID,
    MIB_IF_ROW2: koffi.struct('MIB_IF_ROW2', {
      InterfaceLuid: u64, InterfaceIndex: u32, InterfaceGuid: GUID,
      Alias: koffi.array('char16_t', 257, 'String'), Description: koffi.array('char16_t', 257, 'String'),
      PhysicalAddressLength: u32, PhysicalAddress: koffi.array('uint8_t', 32), PermanentPhysicalAddress: koffi.array('uint8_t', 32),
      ...names('Mtu Type TunnelType MediaType PhysicalMediumType AccessType DirectionType', u32),
      InterfaceAndOperStatusFlags: 'uint8_t',
      ...names('OperStatus AdminStatus MediaConnectState', u32),
      NetworkGuid: GUID, ConnectionType: u32,
      TransmitLinkSpeed: u64, ReceiveLinkSpeed: u64,
      ...names(IF_COUNTERS.join(' '), u64),
    }),
    MIB_TCPSTATS: koffi.struct('MIB_TCPSTATS', names(TCPSTATS_FIELDS.join(' '), u32)),
    MIB_TCPSTATS2: koffi.struct('MIB_TCPSTATS2', {
      ...names('dwRtoAlgorithm dwRtoMin dwRtoMax dwMaxConn dwActiveOpens dwPassiveOpens dwAttemptFails dwEstabResets dwCurrEstab', u32),
      dw64InSegs: u64, dw64OutSegs: u64,
      ...names('dwRetransSegs dwInErrs dwOutRsts dwNumConns', u32),
    }),
    MIB_UDPSTATS: koffi.struct('MIB_UDPSTATS', names(UDPSTATS_FIELDS.join(' '), u32)),
    MIB_IPSTATS: koffi.struct('MIB_IPSTATS', names(IPSTATS_FIELDS.join(' '), u32)),
    MIB_TCPROW2: koffi.struct('MIB_TCPROW2', names('dwState dwLocalAddr dwLocalPort dwRemoteAddr dwRemotePort dwOwningPid dwOffloadState', u32)),
    MIB_TCP6ROW2: koffi.struct('MIB_TCP6ROW2', {
      LocalAddr: koffi.array('uint8_t', 16), dwLocalScopeId: u32, dwLocalPort: u32,
      RemoteAddr: koffi.array('uint8_t', 16), dwRemoteScopeId: u32, dwRemotePort: u32,
      State: u32, dwOwningPid: u32, dwOffloadState: u32,
    }),
  };
  return types;
}
