/*
 * A fake vmcompute.dll (HNS v1 HNSCall) for the Wine suite, built with mingw-w64.
 * GET /endpointstats/<id>: endpoint i (from the ID's first group, 0x1000 + i) has
 * PacketsReceived 1000(i+1), PacketsSent 2000(i+1), BytesReceived 100000(i+1), BytesSent 200000(i+1),
 * DroppedPacketsIncoming i+1, DroppedPacketsOutgoing 2(i+1).
 * GET /endpoints/: every endpoint with an "Endpoint Port" allocator whose EndpointPortGuid is
 * 0000200<i>-0000-4000-8000-00000000000<i>. GET /networks/: one l2bridge network "azure".
 * Anything else: {"Success":false}.
 */
#include <windows.h>
#include <objbase.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>
#include "fake.h"


__declspec(dllexport) HRESULT WINAPI HNSCall(PCWSTR method, PCWSTR path, PCWSTR request, PWSTR *response) {
  (void)request;
  *response = NULL;
  if (wcscmp(method, L"GET") != 0) {
    *response = dup_wide("{\"Success\":false,\"Error\":\"fake: only GET\"}");
    return S_OK;
  }
  const WCHAR *prefix = L"/endpointstats/";
  if (wcsncmp(path, prefix, wcslen(prefix)) == 0) {
    long long i = (long long)wcstoul(path + wcslen(prefix), NULL, 16) - 0x1000;
    if (i < 0 || i >= endpoint_count()) {
      *response = dup_wide("{\"Success\":false,\"Error\":\"Endpoint was not found.\"}");
      return S_OK;
    }
    char doc[512];
    long long k = i + 1;
    sprintf(doc, "{\"Success\":true,\"Output\":{\"EndpointId\":\"x\",\"PacketsReceived\":%lld,\"PacketsSent\":%lld,\"BytesReceived\":%lld,"
                 "\"BytesSent\":%lld,\"DroppedPacketsIncoming\":%lld,\"DroppedPacketsOutgoing\":%lld}}",
            1000 * k, 2000 * k, 100000 * k, 200000 * k, k, 2 * k);
    *response = dup_wide(doc);
    return S_OK;
  }
  if (wcscmp(path, L"/endpoints/") == 0) {
    int n = endpoint_count();
    char *out = malloc((size_t)n * 200 + 64), *p = out;
    p += sprintf(p, "{\"Success\":true,\"Output\":[");
    for (int i = 0; i < n; i++)
      p += sprintf(p, "%s{\"ID\":\"%08X-0000-4000-8000-%012X\",\"Resources\":{\"Allocators\":[{\"Tag\":\"Endpoint Port\",\"EndpointPortGuid\":\"%08X-0000-4000-8000-%012X\"}]}}",
                   i ? "," : "", 0x1000 + i, i, 0x2000 + i, i);
    sprintf(p, "]}");
    *response = dup_wide(out);
    free(out);
    return S_OK;
  }
  if (wcscmp(path, L"/networks/") == 0) {
    *response = dup_wide("{\"Success\":true,\"Output\":[{\"ID\":\"0000A000-0000-4000-8000-000000000000\",\"Name\":\"azure\",\"Type\":\"L2Bridge\","
                         "\"Subnets\":[{\"AddressPrefix\":\"10.240.0.0/16\",\"GatewayAddress\":\"10.240.0.1\"}],\"ManagementIP\":\"10.240.0.4\","
                         "\"SourceMac\":\"00-15-5D-AA-BB-CC\",\"State\":1,\"Policies\":[{\"Type\":\"RemoteSubnetRoute\"}]}]}");
    return S_OK;
  }
  *response = dup_wide("{\"Success\":false,\"Error\":\"fake: unknown path\"}");
  return S_OK;
}
