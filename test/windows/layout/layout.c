/*
 * The x64 layouts of the structs the koffi bindings declare, from the Windows headers (mingw-w64).
 * Compiled with `x86_64-w64-mingw32-gcc -S` only: each L()/S() leaves a "#LAYOUT name value" line
 * in the assembly (the kernel's asm-offsets trick), which test/windows/layout.test.ts compares with
 * koffi's sizeof/offsetof. MIB_TCPSTATS2 is missing from mingw-w64 10, so it is declared here from
 * the Windows SDK's tcpmib.h.
 */
#include <winsock2.h>
#include <ws2ipdef.h>
#include <iphlpapi.h>
#include <stddef.h>
#include <evntrace.h>
#include <evntcons.h>

typedef struct {
  DWORD dwRtoAlgorithm, dwRtoMin, dwRtoMax, dwMaxConn, dwActiveOpens, dwPassiveOpens, dwAttemptFails, dwEstabResets, dwCurrEstab;
  DWORD64 dw64InSegs, dw64OutSegs;
  DWORD dwRetransSegs, dwInErrs, dwOutRsts, dwNumConns;
} SDK_MIB_TCPSTATS2;

#define S(t) __asm__ volatile("#LAYOUT " #t " %c0" ::"i"(sizeof(t)))
#define L(t, f) __asm__ volatile("#LAYOUT " #t "." #f " %c0" ::"i"(offsetof(t, f)))

void layout(void) {
  S(GUID);
  S(MIB_IF_ROW2);
  L(MIB_IF_ROW2, InterfaceIndex); L(MIB_IF_ROW2, InterfaceGuid); L(MIB_IF_ROW2, Alias); L(MIB_IF_ROW2, Description);
  L(MIB_IF_ROW2, PhysicalAddressLength); L(MIB_IF_ROW2, PhysicalAddress); L(MIB_IF_ROW2, Mtu); L(MIB_IF_ROW2, DirectionType);
  L(MIB_IF_ROW2, InterfaceAndOperStatusFlags); L(MIB_IF_ROW2, OperStatus); L(MIB_IF_ROW2, NetworkGuid); L(MIB_IF_ROW2, ConnectionType);
  L(MIB_IF_ROW2, TransmitLinkSpeed); L(MIB_IF_ROW2, InOctets); L(MIB_IF_ROW2, InDiscards); L(MIB_IF_ROW2, InErrors);
  L(MIB_IF_ROW2, OutOctets); L(MIB_IF_ROW2, OutUcastPkts); L(MIB_IF_ROW2, OutErrors); L(MIB_IF_ROW2, OutQLen);
  S(MIB_IF_TABLE2); L(MIB_IF_TABLE2, Table);
  S(MIB_TCPSTATS); L(MIB_TCPSTATS, dwInSegs); L(MIB_TCPSTATS, dwNumConns);
  S(SDK_MIB_TCPSTATS2); L(SDK_MIB_TCPSTATS2, dw64InSegs); L(SDK_MIB_TCPSTATS2, dw64OutSegs); L(SDK_MIB_TCPSTATS2, dwNumConns);
  S(MIB_UDPSTATS); L(MIB_UDPSTATS, dwNumAddrs);
  S(MIB_IPSTATS); L(MIB_IPSTATS, dwInReceives); L(MIB_IPSTATS, dwNumRoutes);
  S(MIB_TCPROW2); L(MIB_TCPROW2, dwState); L(MIB_TCPROW2, dwOffloadState);
  S(MIB_TCPTABLE2); L(MIB_TCPTABLE2, table);
  S(MIB_TCP6ROW2); L(MIB_TCP6ROW2, dwLocalPort); L(MIB_TCP6ROW2, State); L(MIB_TCP6ROW2, dwOffloadState);
  S(MIB_TCP6TABLE2); L(MIB_TCP6TABLE2, table);
  S(WNODE_HEADER); L(WNODE_HEADER, BufferSize); L(WNODE_HEADER, Guid); L(WNODE_HEADER, ClientContext); L(WNODE_HEADER, Flags);
  S(EVENT_TRACE_PROPERTIES); L(EVENT_TRACE_PROPERTIES, BufferSize); L(EVENT_TRACE_PROPERTIES, MinimumBuffers); L(EVENT_TRACE_PROPERTIES, MaximumBuffers);
  L(EVENT_TRACE_PROPERTIES, LogFileMode); L(EVENT_TRACE_PROPERTIES, FlushTimer); L(EVENT_TRACE_PROPERTIES, EventsLost); L(EVENT_TRACE_PROPERTIES, LogBuffersLost);
  L(EVENT_TRACE_PROPERTIES, RealTimeBuffersLost); L(EVENT_TRACE_PROPERTIES, LogFileNameOffset); L(EVENT_TRACE_PROPERTIES, LoggerNameOffset);
  S(ENABLE_TRACE_PARAMETERS); L(ENABLE_TRACE_PARAMETERS, Version); L(ENABLE_TRACE_PARAMETERS, EnableFilterDesc); L(ENABLE_TRACE_PARAMETERS, FilterDescCount);
  S(EVENT_HEADER); L(EVENT_HEADER, Flags); L(EVENT_HEADER, TimeStamp); L(EVENT_HEADER, ProviderId); L(EVENT_HEADER, EventDescriptor);
  S(EVENT_RECORD); L(EVENT_RECORD, UserDataLength); L(EVENT_RECORD, UserData);
  S(EVENT_TRACE_LOGFILEW); L(EVENT_TRACE_LOGFILEW, LoggerName); L(EVENT_TRACE_LOGFILEW, ProcessTraceMode); L(EVENT_TRACE_LOGFILEW, EventsLost);
  L(EVENT_TRACE_LOGFILEW, EventRecordCallback); L(EVENT_TRACE_LOGFILEW, Context);
}
