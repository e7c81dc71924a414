/*
 * A fake of the ETW consumer functions of advapi32.dll (Wine's are stubs), loaded through
 * RETINATS_DLL_ADVAPI32 (by the koffi bindings, and by native-windows/retina-etw.dll, which is handed
 * the same path). One session at a time. ProcessTrace replays the PktMon events of the file
 * FAKE_PKTMON_EVENTS (test/fixtures/windows/pktmon-events.txt: "<id> <FILETIME> <hex>" lines) through
 * the consumer's EVENT_RECORD callback (UserContext = the logfile's Context, as ETW sets it), on the
 * thread that called it: FAKE_ETW_EVENTS events in all (default 0: none), cycling through the file,
 * then it blocks until CloseTrace or a STOP of the session, like the real one. Knobs (read when
 * called, from the process environment):
 *   FAKE_ETW_STALE=1          the first StartTraceW finds a left-over session
 *   FAKE_ETW_SESSION_LOST     the EventsLost a QUERY reports (events ETW could not put in a buffer)
 *   FAKE_ETW_BUFFER_EVENTS    events per "buffer": after each, the logfile's BufferCallback is called
 *                             (default 0: no buffers, no BufferCallback)
 *   FAKE_ETW_RT_BUFFERS_LOST  real-time buffers lost: the QUERY's RealTimeBuffersLost, and before each
 *                             of the first that many buffers an RTLostBuffer notice (EventTraceGuid,
 *                             opcode 33) is delivered, as ETW does
 *   FAKE_ETW_RATE             events per second, paced on the performance counter (default 0: as fast
 *                             as the callback returns)
 *   FAKE_ETW_STAMP_INDEX=1    each event's TimeStamp is its index in the replay (0, 1, ...) instead of
 *                             the fixture's FILETIME, so a consumer can tell which events it missed
 * Checks what the real API would refuse: EnableTraceEx2 only for the PktMon provider GUID, OpenTraceW
 * only in real-time EVENT_RECORD mode for the started session's name. Exports for the tests:
 * FakeEtwReplayed() (events replayed so far), FakeEtwProducing() (1 while the replay loop runs),
 * FakeEtwInProcessTrace() (1 while ProcessTrace has not returned), FakeEtwCloseCalls(), and
 * FakeEtwProducerCpuNs() (CPU time of the ProcessTrace thread over the replay: the fake's own work
 * plus the consumer's callback).
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
static PEVENT_TRACE_BUFFER_CALLBACKW buffer_callback;
static PEVENT_TRACE_LOGFILEW logfile;
static volatile LONG closed, producing, in_process, close_calls;
static volatile LONG64 replayed, producer_cpu_ns;

static long env_long(const char *name, long dflt) {
  char buf[64];
  DWORD n = GetEnvironmentVariableA(name, buf, sizeof buf);
  return n > 0 && n < sizeof buf ? atol(buf) : dflt;
}

__declspec(dllexport) LONG64 FakeEtwReplayed(void) { return replayed; }
__declspec(dllexport) LONG FakeEtwProducing(void) { return producing; }
__declspec(dllexport) LONG FakeEtwInProcessTrace(void) { return in_process; }
__declspec(dllexport) LONG FakeEtwCloseCalls(void) { return close_calls; }
__declspec(dllexport) LONG64 FakeEtwProducerCpuNs(void) { return producer_cpu_ns; }

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
    InterlockedExchange(&closed, 1); /* a stopped session ends its consumers' ProcessTrace */
    return ERROR_SUCCESS;
  }
  if (code == EVENT_TRACE_CONTROL_QUERY) {
    p->EventsLost = (ULONG)env_long("FAKE_ETW_SESSION_LOST", 0);
    p->RealTimeBuffersLost = (ULONG)env_long("FAKE_ETW_RT_BUFFERS_LOST", 0);
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
  buffer_callback = lf->BufferCallback;
  logfile = lf;
  closed = 0;
  return 0x5678;
}

__declspec(dllexport) ULONG WINAPI CloseTrace(TRACEHANDLE h) {
  if (h != 0x5678) return ERROR_INVALID_HANDLE;
  InterlockedIncrement(&close_calls);
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

static const GUID EVENT_TRACE_PROVIDER = {0x68fdd900, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};

static LONG64 thread_cpu_ns(void) {
  FILETIME c, e, k, u;
  if (!GetThreadTimes(GetCurrentThread(), &c, &e, &k, &u)) return 0;
  ULARGE_INTEGER kk = {.LowPart = k.dwLowDateTime, .HighPart = k.dwHighDateTime};
  ULARGE_INTEGER uu = {.LowPart = u.dwLowDateTime, .HighPart = u.dwHighDateTime};
  return (LONG64)(kk.QuadPart + uu.QuadPart) * 100;
}

/* Ends a "buffer": the BufferCallback, with the counters ETW keeps in the logfile. */
static void end_buffer(void) {
  if (!buffer_callback) return;
  logfile->BuffersRead++;
  buffer_callback(logfile);
}

__declspec(dllexport) ULONG WINAPI ProcessTrace(PTRACEHANDLE hs, ULONG count, LPFILETIME start, LPFILETIME end) {
  static Ev evs[64];
  if (count != 1 || hs[0] != 0x5678) return ERROR_INVALID_HANDLE;
  InterlockedExchange(&in_process, 1);
  int n = load(evs, 64);
  long total = env_long("FAKE_ETW_EVENTS", 0);
  long per_buffer = env_long("FAKE_ETW_BUFFER_EVENTS", 0);
  long rt_lost = env_long("FAKE_ETW_RT_BUFFERS_LOST", 0);
  long rate = env_long("FAKE_ETW_RATE", 0);
  long stamp_index = env_long("FAKE_ETW_STAMP_INDEX", 0);
  LARGE_INTEGER freq, t0, now;
  QueryPerformanceFrequency(&freq);
  QueryPerformanceCounter(&t0);
  replayed = 0;
  producer_cpu_ns = 0;
  InterlockedExchange(&producing, 1);
  LONG64 cpu0 = thread_cpu_ns();
  EVENT_RECORD rec;
  long in_buffer = 0, buffers = 0;
  for (long i = 0; n > 0 && i < total && !closed; i++) {
    if (rate > 0 && (i & 63) == 0) {
      for (;;) {
        QueryPerformanceCounter(&now);
        double due = (double)(now.QuadPart - t0.QuadPart) / (double)freq.QuadPart * (double)rate;
        if (i <= due || closed) break;
        Sleep(1);
      }
    }
    if (per_buffer > 0 && in_buffer == 0 && buffers < rt_lost) {
      /* ETW delivers an RTLostBuffer notice before the events of the buffer that follows a loss */
      memset(&rec, 0, sizeof rec);
      rec.EventHeader.Size = sizeof(EVENT_HEADER);
      rec.EventHeader.ProviderId = EVENT_TRACE_PROVIDER;
      rec.EventHeader.EventDescriptor.Opcode = 33;
      rec.UserContext = logfile->Context;
      callback(&rec);
      in_buffer++;
    }
    Ev *e = &evs[i % n];
    memset(&rec, 0, sizeof rec);
    rec.EventHeader.Size = sizeof(EVENT_HEADER);
    rec.EventHeader.Flags = EVENT_HEADER_FLAG_64_BIT_HEADER;
    rec.EventHeader.TimeStamp.QuadPart = stamp_index ? i : e->ts;
    rec.EventHeader.ProviderId = PKTMON;
    rec.EventHeader.EventDescriptor.Id = e->id;
    rec.BufferContext.ProcessorNumber = (UCHAR)(buffers & 3);
    rec.UserDataLength = e->len;
    rec.UserData = e->data;
    rec.UserContext = logfile->Context;
    callback(&rec);
    InterlockedIncrement64(&replayed);
    if (per_buffer > 0 && ++in_buffer >= per_buffer) {
      end_buffer();
      in_buffer = 0;
      buffers++;
    }
  }
  if (in_buffer > 0) end_buffer();
  producer_cpu_ns = thread_cpu_ns() - cpu0;
  InterlockedExchange(&producing, 0);
  while (!closed) Sleep(5);
  InterlockedExchange(&in_process, 0);
  return ERROR_SUCCESS;
}
