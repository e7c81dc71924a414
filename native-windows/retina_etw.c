/*
 * retina-etw.dll: a native consumer of one ETW real-time session, for the pktmon plugin
 * (src/ffi/windows/etw-native.ts). ProcessTrace runs on a thread of ours and its EVENT_RECORD
 * callback, plain C, copies each event of the chosen provider (a 16-byte record head + the user
 * data) into a bounded byte ring in native memory; an event that does not fit is counted
 * (`overflow`), never waited for, so ETW is never held up. JS takes a batch with ONE call,
 * RetinaEtwDrain, into a buffer it allocated once. Single producer (the ProcessTrace thread),
 * single consumer (the caller of RetinaEtwDrain): the ring's two positions are the only shared
 * state, published with release stores and read with acquire loads.
 *
 * Losses it reports, besides `overflow`: the RT_LostEvent notices ETW delivers to a real-time
 * consumer (EventTraceGuid, opcode 32 RTLostEvent, 33 RTLostBuffer, 34 RTLostFile), and the events
 * per delivered buffer (`buffers`, `bufferEvents`, from the BufferCallback), which the caller uses
 * to turn the session's RealTimeBuffersLost (a count of buffers) into events.
 *
 * The ETW consumer functions are looked up in the DLL whose path the caller passes (advapi32.dll
 * on a node; the Wine suite passes its fake), so the same seam as the koffi bindings applies.
 * Built with mingw-w64 by `make` (mk/windows.mk) and by build.ps1 on Windows, from this file alone.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <evntrace.h>
#include <evntcons.h>
#include <stdint.h>
#include <string.h>

#define RETINA_ETW_API __declspec(dllexport)
#define RETINA_ETW_VERSION 1

/* One record, in the ring and in the drain buffer: 16 bytes then the user data, padded to 16. */
typedef struct {
  uint16_t dataLength;
  uint16_t id;
  uint8_t version;
  uint8_t kind; /* RECORD_EVENT, or RECORD_PAD (ring only: the rest of the ring is unused) */
  uint16_t processor;
  int64_t timestamp;
} RecordHead;

enum { RECORD_EVENT = 0, RECORD_PAD = 1 };
#define HEAD_BYTES ((uint32_t)sizeof(RecordHead))
#define ALIGN16(n) (((n) + 15u) & ~15u)

/* What RetinaEtwDrain and RetinaEtwClose report: u64 counters, then two u32. Layout is the ABI. */
typedef struct {
  uint64_t received;      /* events of the provider that ETW handed over (ringed + overflow) */
  uint64_t ringed;        /* of which copied into the ring */
  uint64_t overflow;      /* of which did not fit in the ring */
  uint64_t drained;       /* records taken by RetinaEtwDrain */
  uint64_t other;         /* events of other providers (not ringed) */
  uint64_t lostNotices;   /* RT_LostEvent notices (RTLostEvent/RTLostBuffer/RTLostFile) */
  uint64_t buffers;       /* buffers ETW delivered (BufferCallback calls) */
  uint64_t bufferEvents;  /* events in those buffers (all providers, notices included) */
  uint32_t done;          /* 1 once ProcessTrace has returned */
  uint32_t processRc;     /* its return code (when done) */
} RetinaEtwStats;

typedef TRACEHANDLE(WINAPI *OpenTraceWFn)(PEVENT_TRACE_LOGFILEW);
typedef ULONG(WINAPI *ProcessTraceFn)(PTRACEHANDLE, ULONG, LPFILETIME, LPFILETIME);
typedef ULONG(WINAPI *CloseTraceFn)(TRACEHANDLE);

static const GUID EVENT_TRACE_GUID = {0x68fdd900, 0x4a3e, 0x11d1, {0x84, 0xf4, 0x00, 0x00, 0xf8, 0x04, 0x64, 0xe3}};

typedef struct {
  /* the ring: `head` written by the producer only, `tail` by the consumer only */
  uint8_t *ring;
  uint64_t capacity; /* bytes, a multiple of 16 */
  volatile uint64_t head;
  volatile uint64_t tail;
  RetinaEtwStats s;    /* producer-owned counters (drained and done excepted) */
  uint64_t eventsSinceBuffer;
  GUID provider;
  HMODULE lib;
  ProcessTraceFn processTrace;
  CloseTraceFn closeTrace;
  TRACEHANDLE trace;
  HANDLE thread;
  WCHAR name[256];
  EVENT_TRACE_LOGFILEW logfile;
} Consumer;

static uint64_t load_acquire(volatile uint64_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void store_release(volatile uint64_t *p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
static uint64_t load_relaxed(uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void add_relaxed(uint64_t *p, uint64_t v) { __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED); }

/* Producer: one event into the ring, or counted as overflow. */
static void ring_put(Consumer *c, const EVENT_RECORD *r) {
  uint32_t len = r->UserDataLength;
  uint32_t need = ALIGN16(HEAD_BYTES + len);
  uint64_t head = c->head;
  uint64_t tail = load_acquire(&c->tail);
  uint64_t at = head % c->capacity;
  uint64_t toEnd = c->capacity - at;
  uint64_t pad = need > toEnd ? toEnd : 0; /* a record never wraps: pad the end of the ring */
  add_relaxed(&c->s.received, 1);
  if (head + pad + need - tail > c->capacity) {
    add_relaxed(&c->s.overflow, 1);
    return;
  }
  if (pad) {
    RecordHead *p = (RecordHead *)(c->ring + at);
    p->kind = RECORD_PAD;
    head += pad;
    at = 0;
  }
  RecordHead *h = (RecordHead *)(c->ring + at);
  h->dataLength = (uint16_t)len;
  h->id = r->EventHeader.EventDescriptor.Id;
  h->version = r->EventHeader.EventDescriptor.Version;
  h->kind = RECORD_EVENT;
  h->processor = r->BufferContext.ProcessorNumber;
  h->timestamp = r->EventHeader.TimeStamp.QuadPart;
  if (len) memcpy(c->ring + at + HEAD_BYTES, r->UserData, len);
  add_relaxed(&c->s.ringed, 1);
  store_release(&c->head, head + need);
}

static VOID WINAPI on_event(PEVENT_RECORD r) {
  Consumer *c = (Consumer *)r->UserContext;
  c->eventsSinceBuffer++;
  if (IsEqualGUID(&r->EventHeader.ProviderId, &c->provider)) {
    ring_put(c, r);
  } else if (IsEqualGUID(&r->EventHeader.ProviderId, &EVENT_TRACE_GUID) && r->EventHeader.EventDescriptor.Opcode >= 32 &&
             r->EventHeader.EventDescriptor.Opcode <= 34) {
    add_relaxed(&c->s.lostNotices, 1);
  } else {
    add_relaxed(&c->s.other, 1);
  }
}

static ULONG WINAPI on_buffer(PEVENT_TRACE_LOGFILEW lf) {
  Consumer *c = (Consumer *)lf->Context;
  add_relaxed(&c->s.buffers, 1);
  add_relaxed(&c->s.bufferEvents, c->eventsSinceBuffer);
  c->eventsSinceBuffer = 0;
  return TRUE;
}

static DWORD WINAPI run(LPVOID arg) {
  Consumer *c = (Consumer *)arg;
  ULONG rc = c->processTrace(&c->trace, 1, NULL, NULL);
  __atomic_store_n(&c->s.processRc, rc, __ATOMIC_RELAXED);
  __atomic_store_n(&c->s.done, 1, __ATOMIC_RELEASE);
  return rc;
}

static void snapshot(Consumer *c, RetinaEtwStats *out) {
  if (!out) return;
  out->done = __atomic_load_n(&c->s.done, __ATOMIC_ACQUIRE);
  out->processRc = __atomic_load_n(&c->s.processRc, __ATOMIC_RELAXED);
  out->received = load_relaxed(&c->s.received);
  out->ringed = load_relaxed(&c->s.ringed);
  out->overflow = load_relaxed(&c->s.overflow);
  out->drained = c->s.drained;
  out->other = load_relaxed(&c->s.other);
  out->lostNotices = load_relaxed(&c->s.lostNotices);
  out->buffers = load_relaxed(&c->s.buffers);
  out->bufferEvents = load_relaxed(&c->s.bufferEvents);
}

RETINA_ETW_API uint32_t RetinaEtwVersion(void) { return RETINA_ETW_VERSION; }

RETINA_ETW_API uint32_t RetinaEtwStatsSize(void) { return (uint32_t)sizeof(RetinaEtwStats); }

static void destroy(Consumer *c) {
  if (c->lib) FreeLibrary(c->lib);
  if (c->ring) VirtualFree(c->ring, 0, MEM_RELEASE);
  HeapFree(GetProcessHeap(), 0, c);
}

/*
 * Opens the real-time session `session` (a NUL-terminated UTF-16 name), consuming the events of
 * `provider` (16 bytes, a GUID struct) into a ring of `ringBytes` (rounded up to 64 KiB, at least
 * 1 MiB), with the ETW functions of the DLL `etwDll` (advapi32.dll). Starts ProcessTrace on a new
 * thread. Returns the consumer, or NULL with a Win32 error in *error (and the failing step: 1
 * LoadLibrary, 2 GetProcAddress, 3 memory, 4 OpenTraceW, 5 CreateThread) in *step.
 */
RETINA_ETW_API void *RetinaEtwOpen(const WCHAR *etwDll, const WCHAR *session, const uint8_t *provider, uint32_t ringBytes,
                                   uint32_t *error, uint32_t *step) {
  Consumer *c = HeapAlloc(GetProcessHeap(), HEAP_ZERO_MEMORY, sizeof *c);
  *error = 0;
  *step = 3;
  if (!c) {
    *error = ERROR_NOT_ENOUGH_MEMORY;
    return NULL;
  }
  uint64_t cap = ringBytes < (1u << 20) ? (1u << 20) : ((uint64_t)ringBytes + 0xffffu) & ~(uint64_t)0xffffu;
  c->ring = VirtualAlloc(NULL, cap, MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
  if (!c->ring) {
    *error = GetLastError();
    destroy(c);
    return NULL;
  }
  c->capacity = cap;
  memcpy(&c->provider, provider, sizeof c->provider);
  lstrcpynW(c->name, session, 256);
  *step = 1;
  c->lib = LoadLibraryW(etwDll);
  if (!c->lib) {
    *error = GetLastError();
    destroy(c);
    return NULL;
  }
  *step = 2;
  OpenTraceWFn openTrace = (OpenTraceWFn)(void *)GetProcAddress(c->lib, "OpenTraceW");
  c->processTrace = (ProcessTraceFn)(void *)GetProcAddress(c->lib, "ProcessTrace");
  c->closeTrace = (CloseTraceFn)(void *)GetProcAddress(c->lib, "CloseTrace");
  if (!openTrace || !c->processTrace || !c->closeTrace) {
    *error = ERROR_PROC_NOT_FOUND;
    destroy(c);
    return NULL;
  }
  *step = 4;
  c->logfile.LoggerName = c->name;
  c->logfile.ProcessTraceMode = PROCESS_TRACE_MODE_REAL_TIME | PROCESS_TRACE_MODE_EVENT_RECORD;
  c->logfile.EventRecordCallback = on_event;
  c->logfile.BufferCallback = on_buffer;
  c->logfile.Context = c;
  c->trace = openTrace(&c->logfile);
  if (c->trace == INVALID_PROCESSTRACE_HANDLE) {
    *error = GetLastError();
    destroy(c);
    return NULL;
  }
  *step = 5;
  c->thread = CreateThread(NULL, 0, run, c, 0, NULL);
  if (!c->thread) {
    *error = GetLastError();
    c->closeTrace(c->trace);
    destroy(c);
    return NULL;
  }
  *step = 0;
  return c;
}

/*
 * Consumer: copies whole records, oldest first, into `out` (`cap` bytes) until it is full, the
 * ring is empty or `maxEvents` are taken; frees their ring space. Returns the bytes written (each
 * record: RecordHead, user data, padding to 16). Fills `stats` (may be NULL).
 */
RETINA_ETW_API uint32_t RetinaEtwDrain(void *handle, uint8_t *out, uint32_t cap, uint32_t maxEvents, RetinaEtwStats *stats) {
  Consumer *c = handle;
  uint64_t tail = c->tail;
  uint64_t head = load_acquire(&c->head);
  uint32_t used = 0, taken = 0;
  while (tail < head && taken < maxEvents) {
    uint64_t at = tail % c->capacity;
    const RecordHead *h = (const RecordHead *)(c->ring + at);
    if (h->kind == RECORD_PAD) {
      tail += c->capacity - at;
      continue;
    }
    uint32_t size = ALIGN16(HEAD_BYTES + h->dataLength);
    if (used + size > cap) break;
    memcpy(out + used, h, size);
    used += size;
    tail += size;
    taken++;
  }
  store_release(&c->tail, tail);
  c->s.drained += taken;
  snapshot(c, stats);
  return used;
}

/* Counters only (no records taken). */
RETINA_ETW_API void RetinaEtwStatsGet(void *handle, RetinaEtwStats *stats) { snapshot(handle, stats); }

/*
 * Stops consuming: CloseTrace, then waits up to `timeoutMs` for the ProcessTrace thread to return
 * and frees everything. Returns 0 when the thread was joined (its final counters in `stats`),
 * WAIT_TIMEOUT (258) when it did not return in time (the consumer is then left allocated: the
 * thread still uses it), or CloseTrace's error.
 */
RETINA_ETW_API uint32_t RetinaEtwClose(void *handle, uint32_t timeoutMs, RetinaEtwStats *stats) {
  Consumer *c = handle;
  ULONG rc = c->closeTrace(c->trace);
  /* ERROR_CTX_CLOSE_PENDING: the trace closes once ProcessTrace has returned (real ETW, real-time) */
  if (rc != ERROR_SUCCESS && rc != ERROR_CTX_CLOSE_PENDING && !__atomic_load_n(&c->s.done, __ATOMIC_ACQUIRE)) return rc;
  if (WaitForSingleObject(c->thread, timeoutMs) != WAIT_OBJECT_0) return WAIT_TIMEOUT;
  CloseHandle(c->thread);
  snapshot(c, stats);
  destroy(c);
  return 0;
}
