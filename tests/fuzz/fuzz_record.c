/* fuzz_record.c — libFuzzer harness for the results readers.
 *
 * Results files are read back by `crucible` (resume, merge) and by trainers:
 * JSONL through cr_record_from_json, binary through the length-framed pipe
 * reader and cr_wire_record_unpack. The same bytes go through all of them.
 * A record read from JSON must write back to JSON that reads again, and a
 * record read from protobuf must render as JSON and CSV without faults.
 *
 * Built with -fsanitize=fuzzer, or #included by tests/test_fuzz_regress.c
 * (see fuzz_envelope.c). */
#include "error.h"
#include "record.h"
#include "wire.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *s_rec_null; /* /dev/null for the CSV writer; opened once, kept */

static void s_rec_render(const Crucible__RewardRecord *r)
{
    char *js = cr_record_to_json(r);
    if (js) {
        Crucible__RewardRecord *back = NULL;
        char err[256];
        if (cr_record_from_json(js, &back, err, sizeof err) != 0)
            abort(); /* what we write we must read */
        crucible__reward_record__free_unpacked(back, NULL);
        free(js);
    }
    uint8_t *buf = NULL;
    size_t len = 0;
    if (cr_wire_record_pack(r, &buf, &len) == 0) {
        Crucible__RewardRecord *again = NULL;
        if (cr_wire_record_unpack(buf, len, &again) != 0)
            abort(); /* the store packs what it keeps: it must read back */
        crucible__reward_record__free_unpacked(again, NULL);
        free(buf);
    }
    if (!s_rec_null)
        s_rec_null = fopen("/dev/null", "w");
    if (s_rec_null)
        cr_record_csv_row(s_rec_null, r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* JSONL line */
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    Crucible__RewardRecord *r = NULL;
    char err[256];
    if (cr_record_from_json(text, &r, err, sizeof err) == 0) {
        s_rec_render(r);
        crucible__reward_record__free_unpacked(r, NULL);
    } else if (r) {
        abort(); /* contract: *out is NULL on failure */
    }
    free(text);

    /* a framed stream (the runner's pipe): walk every complete frame */
    const uint8_t *p = data;
    size_t left = size;
    const uint8_t *payload;
    size_t plen;
    while (cr_wire_frame_parse(p, left, CR_WIRE_MAX_MSG, &payload, &plen) == 0) {
        Crucible__RewardRecord *fr = NULL;
        if (cr_wire_record_unpack(payload, plen, &fr) == 0) {
            s_rec_render(fr);
            crucible__reward_record__free_unpacked(fr, NULL);
        }
        p = payload + plen;
        left = size - (size_t)(p - data);
    }

    /* the bytes as one bare record */
    Crucible__RewardRecord *br = NULL;
    if (cr_wire_record_unpack(data, size, &br) == 0) {
        s_rec_render(br);
        crucible__reward_record__free_unpacked(br, NULL);
    }
    return 0;
}
