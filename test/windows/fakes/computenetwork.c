/*
 * A fake computenetwork.dll (HCN) for the Wine suite, built with mingw-w64. FAKE_HCN_ENDPOINTS
 * endpoints (default 4), IDs 0000100<i>-0000-4000-8000-00000000000<i>, IP 10.240.<i/250>.<i%250+1>.
 * Endpoint 1 fails HcnQueryEndpointProperties with an error record; endpoint 2 vanishes between
 * enumerate and open (HRESULT_FROM_WIN32(ERROR_NOT_FOUND)). Enumerate answers Retina's {"State":3}
 * filter and the empty filter (all endpoints: those, then one detached endpoint, index n, State 2,
 * with a policy); it refuses any other query. FakeOpenHandles() tells the test whether every handle was closed.
 * Every string returned is CoTaskMemAlloc'ed, as the real DLL does.
 */
#include <windows.h>
#include <objbase.h>
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>
#include "fake.h"
#include <ctype.h>

static LONG open_handles;


static void endpoint_id(int i, char *buf) { sprintf(buf, "%08X-0000-4000-8000-%012X", 0x1000 + i, i); }

__declspec(dllexport) HRESULT WINAPI HcnEnumerateEndpoints(PCWSTR query, PWSTR *endpoints, PWSTR *error) {
  *endpoints = NULL;
  *error = NULL;
  int all = query && wcsstr(query, L"\"Filter\":\"\"") != NULL;
  if (!query || (!all && !wcsstr(query, L"\\\"State\\\":3"))) {
    *error = dup_wide("{\"Error\":\"fake: a filter other than State 3 or none\",\"ErrorCode\":2147942487}");
    return E_INVALIDARG;
  }
  int n = endpoint_count() + (all ? 1 : 0);
  char *out = malloc((size_t)n * 40 + 4), *p = out;
  *p++ = '[';
  for (int i = 0; i < n; i++) {
    char id[40];
    endpoint_id(i, id);
    /* mixed case, as real output may be: lower-case the odd ones */
    if (i % 2) for (char *c = id; *c; c++) *c = (char)tolower(*c);
    p += sprintf(p, "%s\"%s\"", i ? "," : "", id);
  }
  *p++ = ']';
  *p = 0;
  *endpoints = dup_wide(out);
  free(out);
  return S_OK;
}

__declspec(dllexport) HRESULT WINAPI HcnOpenEndpoint(const GUID *id, void **endpoint, PWSTR *error) {
  *endpoint = NULL;
  *error = NULL;
  int i = (int)id->Data1 - 0x1000;
  if (i < 0 || i > endpoint_count() || i == 2) {
    *error = dup_wide("{\"Error\":\"fake: endpoint not found\",\"ErrorCode\":2147943568}");
    return HRESULT_FROM_WIN32(ERROR_NOT_FOUND);
  }
  int *h = malloc(sizeof(int));
  *h = i;
  InterlockedIncrement(&open_handles);
  *endpoint = h;
  return S_OK;
}

__declspec(dllexport) HRESULT WINAPI HcnQueryEndpointProperties(void *endpoint, PCWSTR query, PWSTR *props, PWSTR *error) {
  (void)query;
  *props = NULL;
  *error = NULL;
  int i = *(int *)endpoint;
  if (i == 1) {
    *error = dup_wide("{\"Success\":false,\"Error\":\"fake: the endpoint's compartment is gone\",\"ErrorCode\":2151350273}");
    return (HRESULT)0x803B0001;
  }
  char id[40], doc[1024];
  endpoint_id(i, id);
  int detached = i == endpoint_count();
  sprintf(doc, "{\"ID\":\"%s\",\"Name\":\"ep%d\",\"HostComputeNetwork\":\"0000A000-0000-4000-8000-000000000000\","
               "\"IpConfigurations\":[{\"IpAddress\":\"10.240.%d.%d\",\"PrefixLength\":16}],"
               "\"MacAddress\":\"00-15-5D-00-%02X-%02X\",\"State\":%d,\"Policies\":[%s],\"SchemaVersion\":{\"Major\":2,\"Minor\":0}}",
          id, i, i / 250, i % 250 + 1, (i >> 8) & 0xff, i & 0xff, detached ? 2 : 3,
          detached ? "{\"Type\":\"OutBoundNAT\",\"Settings\":{}},{\"Type\":\"ACL\",\"Settings\":{}},{\"Type\":\"ACL\",\"Settings\":{}}" : "");
  *props = dup_wide(doc);
  return S_OK;
}

__declspec(dllexport) HRESULT WINAPI HcnCloseEndpoint(void *endpoint) {
  free(endpoint);
  InterlockedDecrement(&open_handles);
  return S_OK;
}

__declspec(dllexport) LONG WINAPI FakeOpenHandles(void) { return open_handles; }
