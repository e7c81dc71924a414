/* Shared by the fake DLLs: the endpoint count (FAKE_HCN_ENDPOINTS, default 4) and CoTaskMem strings. */
#include <windows.h>
#include <objbase.h>
#include <stdlib.h>
#include <string.h>

static int endpoint_count(void) {
  const char *s = getenv("FAKE_HCN_ENDPOINTS");
  return s ? atoi(s) : 4;
}

/* An ASCII string as the CoTaskMemAlloc'ed UTF-16 string the real DLLs return. */
static PWSTR dup_wide(const char *s) {
  size_t n = strlen(s) + 1;
  PWSTR w = CoTaskMemAlloc(n * sizeof(WCHAR));
  for (size_t i = 0; i < n; i++) w[i] = (WCHAR)(unsigned char)s[i];
  return w;
}
