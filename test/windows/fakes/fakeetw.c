/*
 * A fake of the ETW consumer functions of advapi32.dll (Wine's are stubs), loaded through
 * RETINATS_DLL_ADVAPI32. One session at a time. ProcessTrace replays the PktMon events of the file
 * FAKE_PKTMON_EVENTS (test/fixtures/windows/pktmon-events.txt: "<id> <FILETIME> <hex>" lines) through
 * the consumer's real EVENT_RECORD callback, on the thread that called it (koffi's worker), as fast
 * as the callback returns: FAKE_ETW_EVENTS events in all (default 0: none), cycling through the
 * file, then it blocks until CloseTrace like the real one. Knobs (read when called, from the
 * process environment): FAKE_ETW_STALE=1 makes the first StartTraceW find a left-over session;
 * FAKE_ETW_SESSION_LOST is the EventsLost a QUERY reports. Checks what the real API would refuse:
 * EnableTraceEx2 only for the PktMon provider GUID, OpenTraceW only in real-time EVENT_RECORD mode
 * for the started session's name. FakeEtwReplayed() returns how many events were replayed.
 */
#define _WMI_SOURCE_ /* we define the functions: no dllimport */
#include <windows.h>
#include <evntrace.h>
#include <evntcons.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const GUID PKTMON = {0x4D4F80D9, 0xC8BD, 0x4D73, {0xBB, 0x5B, 0x19, 0xC9, 0x04, 0x02, 0xC5, 0xAC}};
static WCHAR session[256];
static int started, stale_used;
static PEVENT_RECORD_CALLBACK callback;
static volatile LONG closed;
static volatile LONG64 replayed;

static long env_long(const char *name, long dflt) {
  char buf[64];
  DWORD n = GetEnvironmentVariableA(name, buf, sizeof buf);
  return n > 0 && n < sizeof buf ? atol(buf) : dflt;
}

__declspec(dllexport) LONG64 FakeEtwReplayed(void) { return replayed; }

__declspec(dllexport) ULONG WINAPI StartTraceW(PTRACEHANDLE h, LPCWSTR name, PEVENT_TRACE_PROPERTIES p) {
  if (env_long("FAKE_ETW_STALE", 0) && !stale_used) {
    stale_used = 1;
    started = 1;
    lstrcpynW(session, name, 256);
  }
  if (started && lstrcmpW(session, name) == 0) return ERROR_ALREADY_EXISTS;
  if (!(p->LogFileMode & EVENT_TRACE_REAL_TIME_MODE) || p->Wnode.BufferSize < sizeof(*p) || !(p->Wnode.Flags & WNODE_FLAG_TRACED_GUID)) return ERROR_INVALID_PARAMETER;
  lstrcpynW(session, name, 256);
  started = 1;
  closed = 0;
  *h = 0x1234;
  return ERROR_SUCCESS;
}

__declspec(dllexport) ULONG WINAPI ControlTraceW(TRACEHANDLE h, LPCWSTR name, PEVENT_TRACE_PROPERTIES p, ULONG code) {
  if (!started || (name && lstrcmpW(session, name) != 0)) return ERROR_WMI_INSTANCE_NOT_FOUND;
  if (code == EVENT_TRACE_CONTROL_STOP) {
    started = 0;
    return ERROR_SUCCESS;
  }
  if (code == EVENT_TRACE_CONTROL_QUERY) {
    p->EventsLost = (ULONG)env_long("FAKE_ETW_SESSION_LOST", 0);
    p->RealTimeBuffersLost = 0;
    return ERROR_SUCCESS;
  }
  return ERROR_INVALID_PARAMETER;
}

__declspec(dllexport) ULONG WINAPI EnableTraceEx2(TRACEHANDLE h, LPCGUID provider, ULONG code, UCHAR level, ULONGLONG any, ULONGLONG all, ULONG timeout, PENABLE_TRACE_PARAMETERS params) {
  if (h != 0x1234 || !started) return ERROR_INVALID_HANDLE;
  if (memcmp(provider, &PKTMON, sizeof PKTMON) != 0 || code != 1 || (params && params->Version != 2)) return ERROR_INVALID_PARAMETER;
  return ERROR_SUCCESS;
}

__declspec(dllexport) TRACEHANDLE WINAPI OpenTraceW(PEVENT_TRACE_LOGFILEW lf) {
  ULONG need = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD;
  if (!started || !lf->LoggerName || lstrcmpW(lf->LoggerName, session) != 0 || (lf->ProcessTraceMode & need) != need || !lf->EventRecordCallback) {
    SetLastError(ERROR_WMI_INSTANCE_NOT_FOUND);
    return INVALID_PROCESSTRACE_HANDLE;
  }
  callback = lf->EventRecordCallback;
  closed = 0;
  return 0x5678;
}

__declspec(dllexport) ULONG WINAPI CloseTrace(TRACEHANDLE h) {
  if (h != 0x5678) return ERROR_INVALID_HANDLE;
  InterlockedExchange(&closed, 1);
  return ERROR_SUCCESS;
}

typedef struct { USHORT id; LONGLONG ts; USHORT len; BYTE data[2048]; } Ev;

static int load(Ev *evs, int max) {
  char path[MAX_PATH];
  DWORD n = GetEnvironmentVariableA("FAKE_PKTMON_EVENTS", path, sizeof path);
  if (n == 0 || n >= sizeof path) return 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  static char line[8192];
  int count = 0;
  while (count < max && fgets(line, sizeof line, f)) {
    unsigned id;
    long long ts;
    char hex[6000];
    if (line[0] == '#' || sscanf(line, "%u %lld %5999s", &id, &ts, hex) != 3) continue;
    Ev *e = &evs[count++];
    e->id = (USHORT)id;
    e->ts = ts;
    e->len = (USHORT)(strlen(hex) / 2);
    for (int i = 0; i < e->len; i++) sscanf(hex + 2 * i, "%2hhx", &e->data[i]);
  }
  fclose(f);
  return count;
}

__declspec(dllexport) ULONG WINAPI ProcessTrace(PTRACEHANDLE hs, ULONG count, LPFILETIME start, LPFILETIME end) {
  static Ev evs[64];
  if (count != 1 || hs[0] != 0x5678) return ERROR_INVALID_HANDLE;
  int n = load(evs, 64);
  long total = env_long("FAKE_ETW_EVENTS", 0);
  replayed = 0;
  EVENT_RECORD rec;
  for (long i = 0; n > 0 && i < total && !closed; i++) {
    Ev *e = &evs[i % n];
    memset(&rec, 0, sizeof rec);
    rec.EventHeader.Size = sizeof(EVENT_HEADER);
    rec.EventHeader.Flags = EVENT_HEADER_FLAG_64_BIT_HEADER;
    rec.EventHeader.TimeStamp.QuadPart = e->ts;
    rec.EventHeader.ProviderId = PKTMON;
    rec.EventHeader.EventDescriptor.Id = e->id;
    rec.UserDataLength = e->len;
    rec.UserData = e->data;
    callback(&rec);
    InterlockedIncrement64(&replayed);
  }
  while (!closed) Sleep(5);
  return ERROR_SUCCESS;
}
