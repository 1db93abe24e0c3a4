/*
 * nvtx_client.c: a C program that makes one NVTX call of each kind the recorder handles
 * (A, W and Ex forms; default and named domains; registered strings; ASCII, wide and
 * registered messages), so test_recorder.py can check the tool decodes each one.
 */

#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <wchar.h>

static nvtxEventAttributes_t attrs(void) {
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    return a;
}

int main(void) {
    nvtxEventAttributes_t a = attrs();

    nvtxMarkA("markA");
    nvtxMarkW(L"markW \u00fc\u20ac\U0001F600");
    nvtxRangePushA("pushA");
    nvtxRangePushW(L"pushW \u00e9");
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "pushEx\ttab\\";
    int depth = nvtxRangePushEx(&a);
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangePop();
    nvtxRangeId_t id = nvtxRangeStartW(L"startW");
    nvtxRangeEnd(id);

    nvtxDomainHandle_t d = nvtxDomainCreateW(L"domW");
    nvtxStringHandle_t s = nvtxDomainRegisterStringW(d, L"regW \u2211");
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    nvtxDomainRangePushEx(d, &a);
    nvtxDomainMarkEx(d, &a);
    nvtxDomainRangePop(d);
    a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
    a.message.unicode = L"exW";
    nvtxRangeId_t id2 = nvtxDomainRangeStartEx(d, &a);
    nvtxDomainRangeEnd(d, id2);
    nvtxDomainDestroy(d);

    printf("%d\n", depth);  /* the tool's answer: the 0-based level of the pushed range */
    return 0;
}
