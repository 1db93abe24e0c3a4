/*
 * nvtx_recorder.c: a minimal NVTX v3 tool that records every NVTX event to a text file.
 *
 * NVTX is header-only: each client module (here, the `nvtx` Python package's extensions)
 * carries its own copy of the NVTX entry points. At the first NVTX call a module reads
 * NVTX_INJECTION64_PATH, dlopen()s the library it names and calls its
 * InitializeInjectionNvtx2(getExportTable). This library is such a tool: it asks for the
 * callback tables of the CORE (nvtxRangePushA, ...) and CORE2 (nvtxDomainRangePushEx, ...)
 * modules and fills them, so the ranges a real process emits land in the file named by
 * NVTX_RECORD_FILE, one line per event, in order, written with one write(2) each (no user
 * space buffering, so nothing is lost if the process dies). With NVTX_RECORD_FILE unset the
 * callbacks run but record nothing (useful to time the client side of a push/pop).
 *
 * Line format (tab separated, text fields escaped: \\ \t \n \r):
 *
 *     <tid> <kind> <domain> <value> <message>
 *
 *   tid      the OS thread id (gettid)
 *   kind     push pop start end mark register domain_create domain_destroy
 *            name_category name_thread initialize init
 *   domain   the domain's name; "" for the default domain (NULL handle)
 *   value    push: the 0-based depth of the range started; pop: the depth of the range
 *            ended (-1 when nothing was open); start/end: the range id; else 0
 *   message  the event's text, decoded to UTF-8 from ASCII, wchar_t (UTF-32 on Linux,
 *            UTF-16 where wchar_t is 2 bytes) or a registered-string handle
 *
 * Build: gcc -shared -fPIC -O2 -I<dir holding nvtx3/> nvtx_recorder.c -o libnvtx_recorder.so
 */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

/* Only the types are needed (nvToolsExt.h brings the callback-table types of
   nvtxDetail/nvtxTypes.h along): the tool defines no NVTX entry points of its own. */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#define EXPORT __attribute__((visibility("default")))

/* -- output ------------------------------------------------------------------------------- */

static int g_fd = -1;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static __thread int t_depth = 0;           /* open push ranges on this thread */
static uint64_t g_next_range_id = 1;       /* for nvtxRangeStart*, atomically incremented */

typedef struct {
    char *p;
    size_t len, cap;
} buf_t;

static void buf_reserve(buf_t *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = (char *)realloc(b->p, cap);
    if (!p) abort();
    b->p = p;
    b->cap = cap;
}

static void buf_putc(buf_t *b, char c) {
    buf_reserve(b, 1);
    b->p[b->len++] = c;
}

static void buf_puts(buf_t *b, const char *s) {
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

/* Appends text with tab, newline, CR and backslash escaped so one event stays one line. */
static void buf_put_escaped(buf_t *b, const char *s) {
    for (; s && *s; ++s) {
        switch (*s) {
        case '\\': buf_puts(b, "\\\\"); break;
        case '\t': buf_puts(b, "\\t"); break;
        case '\n': buf_puts(b, "\\n"); break;
        case '\r': buf_puts(b, "\\r"); break;
        default: buf_putc(b, *s);
        }
    }
}

static void put_utf8(buf_t *b, uint32_t cp) {
    if (cp < 0x80) {
        buf_putc(b, (char)cp);
    } else if (cp < 0x800) {
        buf_putc(b, (char)(0xC0 | (cp >> 6)));
        buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        buf_putc(b, (char)(0xE0 | (cp >> 12)));
        buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    } else {
        buf_putc(b, (char)(0xF0 | (cp >> 18)));
        buf_putc(b, (char)(0x80 | ((cp >> 12) & 0x3F)));
        buf_putc(b, (char)(0x80 | ((cp >> 6) & 0x3F)));
        buf_putc(b, (char)(0x80 | (cp & 0x3F)));
    }
}

/* wchar_t text to a freshly malloc'd UTF-8 string: UTF-32 where wchar_t is 4 bytes (Linux),
   UTF-16 with surrogate pairs where it is 2. Invalid code units become U+FFFD. */
static char *wide_to_utf8(const wchar_t *w) {
    buf_t b = {0};
    buf_reserve(&b, 0);
    if (w) {
        for (size_t i = 0; w[i]; ++i) {
            uint32_t cp = (uint32_t)w[i];
            if (sizeof(wchar_t) == 2 && cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo = (uint32_t)w[i + 1];
                if (lo >= 0xDC00 && lo <= 0xDFFF) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ++i;
                } else {
                    cp = 0xFFFD;
                }
            } else if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) {
                cp = 0xFFFD;
            }
            put_utf8(&b, cp);
        }
    }
    b.p[b.len] = '\0';
    return b.p;
}

static void open_output(void) {
    const char *path = getenv("NVTX_RECORD_FILE");
    if (path && *path) g_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* One event, one write(2): O_APPEND keeps concurrent lines whole and in order. */
static void emit(const char *kind, const char *domain, long long value, const char *msg) {
    if (g_fd < 0) return;
    buf_t b = {0};
    char head[64];
    snprintf(head, sizeof head, "%ld\t", (long)syscall(SYS_gettid));
    buf_puts(&b, head);
    buf_puts(&b, kind);
    buf_putc(&b, '\t');
    buf_put_escaped(&b, domain);
    snprintf(head, sizeof head, "\t%lld\t", value);
    buf_puts(&b, head);
    buf_put_escaped(&b, msg);
    buf_putc(&b, '\n');
    size_t off = 0;
    while (off < b.len) {
        ssize_t n = write(g_fd, b.p + off, b.len - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        off += (size_t)n;
    }
    free(b.p);
}

/* -- domains and registered strings ---------------------------------------------------------
   Handles are pointers to our own records; they are never freed (NVTX gives strings no
   destroy call, and a destroyed domain's handle must not dangle if a late event names it). */

typedef struct { char *name; } domain_rec;
typedef struct { char *text; } string_rec;

static const char *domain_name(nvtxDomainHandle_t d) {
    return d ? ((domain_rec *)d)->name : "";
}

static nvtxDomainHandle_t make_domain(char *name) {
    domain_rec *r = (domain_rec *)malloc(sizeof *r);
    r->name = name;
    emit("domain_create", name, 0, name);
    return (nvtxDomainHandle_t)r;
}

static nvtxStringHandle_t make_string(nvtxDomainHandle_t d, char *text) {
    string_rec *r = (string_rec *)malloc(sizeof *r);
    r->text = text;
    emit("register", domain_name(d), 0, text);
    return (nvtxStringHandle_t)r;
}

/* The message of an event-attributes struct as UTF-8 (malloc'd; caller frees). */
static char *attrib_text(const nvtxEventAttributes_t *a) {
    if (!a) return strdup("");
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return strdup(a->message.ascii ? a->message.ascii : "");
    case NVTX_MESSAGE_TYPE_UNICODE:
        return wide_to_utf8(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return strdup(a->message.registered ? ((string_rec *)a->message.registered)->text : "");
    default:
        return strdup("");
    }
}

/* -- ranges and marks (shared by the CORE and CORE2 forms) ---------------------------------- */

static int do_push(nvtxDomainHandle_t d, const char *text) {
    int level = t_depth++;
    emit("push", domain_name(d), level, text);
    return level;
}

static int do_pop(nvtxDomainHandle_t d) {
    int level = t_depth > 0 ? --t_depth : -1;
    emit("pop", domain_name(d), level, "");
    return level;
}

static nvtxRangeId_t do_start(nvtxDomainHandle_t d, const char *text) {
    nvtxRangeId_t id = __atomic_fetch_add(&g_next_range_id, 1, __ATOMIC_RELAXED);
    emit("start", domain_name(d), (long long)id, text);
    return id;
}

static void do_end(nvtxDomainHandle_t d, nvtxRangeId_t id) {
    emit("end", domain_name(d), (long long)id, "");
}

static void do_mark(nvtxDomainHandle_t d, const char *text) {
    emit("mark", domain_name(d), 0, text);
}

/* CORE: the default-domain API (nvtxRangePushA, nvtxMarkW, ...). */
static void NVTX_API markEx(const nvtxEventAttributes_t *a) {
    char *t = attrib_text(a); do_mark(NULL, t); free(t);
}
static void NVTX_API markA(const char *m) { do_mark(NULL, m ? m : ""); }
static void NVTX_API markW(const wchar_t *m) {
    char *t = wide_to_utf8(m); do_mark(NULL, t); free(t);
}
static nvtxRangeId_t NVTX_API rangeStartEx(const nvtxEventAttributes_t *a) {
    char *t = attrib_text(a); nvtxRangeId_t id = do_start(NULL, t); free(t); return id;
}
static nvtxRangeId_t NVTX_API rangeStartA(const char *m) { return do_start(NULL, m ? m : ""); }
static nvtxRangeId_t NVTX_API rangeStartW(const wchar_t *m) {
    char *t = wide_to_utf8(m); nvtxRangeId_t id = do_start(NULL, t); free(t); return id;
}
static void NVTX_API rangeEnd(nvtxRangeId_t id) { do_end(NULL, id); }
static int NVTX_API rangePushEx(const nvtxEventAttributes_t *a) {
    char *t = attrib_text(a); int l = do_push(NULL, t); free(t); return l;
}
static int NVTX_API rangePushA(const char *m) { return do_push(NULL, m ? m : ""); }
static int NVTX_API rangePushW(const wchar_t *m) {
    char *t = wide_to_utf8(m); int l = do_push(NULL, t); free(t); return l;
}
static int NVTX_API rangePop(void) { return do_pop(NULL); }
static void NVTX_API nameCategoryA(uint32_t c, const char *n) {
    emit("name_category", "", c, n ? n : "");
}
static void NVTX_API nameCategoryW(uint32_t c, const wchar_t *n) {
    char *t = wide_to_utf8(n); emit("name_category", "", c, t); free(t);
}
static void NVTX_API nameOsThreadA(uint32_t tid, const char *n) {
    emit("name_thread", "", tid, n ? n : "");
}
static void NVTX_API nameOsThreadW(uint32_t tid, const wchar_t *n) {
    char *t = wide_to_utf8(n); emit("name_thread", "", tid, t); free(t);
}

/* CORE2: the domain API (nvtxDomainRangePushEx, ...), which the nvtx package uses. */
static void NVTX_API domainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char *t = attrib_text(a); do_mark(d, t); free(t);
}
static nvtxRangeId_t NVTX_API domainRangeStartEx(nvtxDomainHandle_t d,
                                                 const nvtxEventAttributes_t *a) {
    char *t = attrib_text(a); nvtxRangeId_t id = do_start(d, t); free(t); return id;
}
static void NVTX_API domainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) { do_end(d, id); }
static int NVTX_API domainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    char *t = attrib_text(a); int l = do_push(d, t); free(t); return l;
}
static int NVTX_API domainRangePop(nvtxDomainHandle_t d) { return do_pop(d); }
static nvtxResourceHandle_t NVTX_API domainResourceCreate(nvtxDomainHandle_t d,
                                                          nvtxResourceAttributes_t *a) {
    (void)a;
    emit("resource_create", domain_name(d), 0, "");
    return (nvtxResourceHandle_t)malloc(1);
}
static void NVTX_API domainResourceDestroy(nvtxResourceHandle_t r) {
    (void)r;
    emit("resource_destroy", "", 0, "");
}
static void NVTX_API domainNameCategoryA(nvtxDomainHandle_t d, uint32_t c, const char *n) {
    emit("name_category", domain_name(d), c, n ? n : "");
}
static void NVTX_API domainNameCategoryW(nvtxDomainHandle_t d, uint32_t c, const wchar_t *n) {
    char *t = wide_to_utf8(n); emit("name_category", domain_name(d), c, t); free(t);
}
static nvtxStringHandle_t NVTX_API domainRegisterStringA(nvtxDomainHandle_t d, const char *s) {
    return make_string(d, strdup(s ? s : ""));
}
static nvtxStringHandle_t NVTX_API domainRegisterStringW(nvtxDomainHandle_t d,
                                                         const wchar_t *s) {
    return make_string(d, wide_to_utf8(s));
}
static nvtxDomainHandle_t NVTX_API domainCreateA(const char *name) {
    return make_domain(strdup(name ? name : ""));
}
static nvtxDomainHandle_t NVTX_API domainCreateW(const wchar_t *name) {
    return make_domain(wide_to_utf8(name));
}
static void NVTX_API domainDestroy(nvtxDomainHandle_t d) {
    emit("domain_destroy", domain_name(d), 0, domain_name(d));
}
static void NVTX_API initialize(const void *reserved) {
    (void)reserved;
    emit("initialize", "", 0, "");
}

/* -- the entry point ------------------------------------------------------------------------ */

typedef struct { unsigned id; NvtxFunctionPointer fn; } slot_t;

#define SLOT(id, fn) { (unsigned)(id), (NvtxFunctionPointer)(fn) }

static const slot_t core_slots[] = {
    SLOT(NVTX_CBID_CORE_MarkEx, markEx),
    SLOT(NVTX_CBID_CORE_MarkA, markA),
    SLOT(NVTX_CBID_CORE_MarkW, markW),
    SLOT(NVTX_CBID_CORE_RangeStartEx, rangeStartEx),
    SLOT(NVTX_CBID_CORE_RangeStartA, rangeStartA),
    SLOT(NVTX_CBID_CORE_RangeStartW, rangeStartW),
    SLOT(NVTX_CBID_CORE_RangeEnd, rangeEnd),
    SLOT(NVTX_CBID_CORE_RangePushEx, rangePushEx),
    SLOT(NVTX_CBID_CORE_RangePushA, rangePushA),
    SLOT(NVTX_CBID_CORE_RangePushW, rangePushW),
    SLOT(NVTX_CBID_CORE_RangePop, rangePop),
    SLOT(NVTX_CBID_CORE_NameCategoryA, nameCategoryA),
    SLOT(NVTX_CBID_CORE_NameCategoryW, nameCategoryW),
    SLOT(NVTX_CBID_CORE_NameOsThreadA, nameOsThreadA),
    SLOT(NVTX_CBID_CORE_NameOsThreadW, nameOsThreadW),
};

static const slot_t core2_slots[] = {
    SLOT(NVTX_CBID_CORE2_DomainMarkEx, domainMarkEx),
    SLOT(NVTX_CBID_CORE2_DomainRangeStartEx, domainRangeStartEx),
    SLOT(NVTX_CBID_CORE2_DomainRangeEnd, domainRangeEnd),
    SLOT(NVTX_CBID_CORE2_DomainRangePushEx, domainRangePushEx),
    SLOT(NVTX_CBID_CORE2_DomainRangePop, domainRangePop),
    SLOT(NVTX_CBID_CORE2_DomainResourceCreate, domainResourceCreate),
    SLOT(NVTX_CBID_CORE2_DomainResourceDestroy, domainResourceDestroy),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryA, domainNameCategoryA),
    SLOT(NVTX_CBID_CORE2_DomainNameCategoryW, domainNameCategoryW),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringA, domainRegisterStringA),
    SLOT(NVTX_CBID_CORE2_DomainRegisterStringW, domainRegisterStringW),
    SLOT(NVTX_CBID_CORE2_DomainCreateA, domainCreateA),
    SLOT(NVTX_CBID_CORE2_DomainCreateW, domainCreateW),
    SLOT(NVTX_CBID_CORE2_DomainDestroy, domainDestroy),
    SLOT(NVTX_CBID_CORE2_Initialize, initialize),
};

static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                const slot_t *slots, size_t n) {
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table) return 0;
    for (size_t i = 0; i < n; ++i)
        if (slots[i].id < size && table[slots[i].id]) *table[slots[i].id] = slots[i].fn;
    return 1;
}

/* Called once per client module (every extension that compiled NVTX in); returns 1 on
   success, 0 to make NVTX roll back and run with no tool. */
EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable) {
    pthread_once(&g_once, open_output);
    const NvtxExportTableCallbacks *cb =
        (const NvtxExportTableCallbacks *)getExportTable(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
    if (!fill(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof *core_slots))
        return 0;
    if (!fill(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof *core2_slots))
        return 0;
    emit("init", "", 0, "");
    return 1;
}
