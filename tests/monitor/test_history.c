/* The dashboard's history (src/monitor/history.c): bounded in samples and in
 * slices, the rates it works out between samples, slices forgotten once their
 * samples have aged out. Views made here, as the monitor would take them. */
#include <cjson/cJSON.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "monitor/history.h"

#define MS 1000000ll

/* A view at second t of n slices "s<first>".."s<first+n-1>", each with figures from k. */
static void view_at(struct gs_view *v, struct gs_view_row *rows, int first, int n, int64_t t_ms,
                    uint64_t k)
{
    memset(v, 0, sizeof *v);
    v->at.tv_sec = t_ms / 1000;
    v->at.tv_nsec = (t_ms % 1000) * 1000000;
    v->rows = rows;
    v->n = n;
    for (int i = 0; i < n; i++) {
        memset(&rows[i], 0, sizeof rows[i]);
        snprintf(rows[i].id, sizeof rows[i].id, "s%d", first + i);
        rows[i].lim.memory = 1u << 30;
        rows[i].lim.compute = 40;
        rows[i].used = k << 20;
        rows[i].gpu_ns = k * 500 * MS; /* half a second of GPU time per second */
        rows[i].requests = k * 10;
        rows[i].request_ns = k * 10 * 2 * MS; /* 2 ms each */
        rows[i].ooms = k / 4;
        rows[i].launches = k * 100;
        rows[i].procs = 1;
    }
}

static cJSON *history(struct gs_history *h)
{
    char *s = gs_history_json(h);
    assert_non_null(s);
    cJSON *j = cJSON_Parse(s);
    free(s);
    assert_non_null(j);
    return j;
}

static cJSON *slice_of(cJSON *j, const char *id)
{
    cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "slices"))
    {
        if (!strcmp(cJSON_GetObjectItem(s, "id")->valuestring, id))
            return s;
    }
    return NULL;
}

static double at(cJSON *s, const char *col, int i)
{
    cJSON *v = cJSON_GetArrayItem(cJSON_GetObjectItem(s, col), i);
    assert_non_null(v);
    return cJSON_IsNull(v) ? -1 : v->valuedouble;
}

static void test_ring_keeps_the_newest(void **st)
{
    (void)st;
    struct gs_history h;
    struct gs_view v;
    struct gs_view_row row;
    assert_int_equal(gs_history_init(&h, 1), 0);
    for (int k = 0; k < GS_HISTORY_SAMPLES + 50; k++) {
        view_at(&v, &row, 0, 1, 1000000 + k * 1000ll, (uint64_t)k);
        gs_history_add(&h, &v);
    }
    cJSON *j = history(&h);
    cJSON *s = slice_of(j, "s0");
    assert_non_null(s);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(s, "t_ms")), GS_HISTORY_SAMPLES);
    /* The oldest kept is sample 50; the newest the last added. */
    assert_true(at(s, "t_ms", 0) == 1000000 + 50 * 1000.0);
    assert_true(at(s, "t_ms", GS_HISTORY_SAMPLES - 1) ==
                1000000 + (GS_HISTORY_SAMPLES + 49) * 1000.0);
    assert_true(at(s, "used_bytes", 0) == 50.0 * (1 << 20));
    cJSON_Delete(j);
    gs_history_destroy(&h);
}

static void test_rates_between_samples(void **st)
{
    (void)st;
    struct gs_history h;
    struct gs_view v;
    struct gs_view_row row;
    assert_int_equal(gs_history_init(&h, 2), 0);
    for (int k = 0; k < 5; k++) {
        view_at(&v, &row, 0, 1, 5000000 + k * 2000ll, (uint64_t)k * 2); /* every 2 s */
        gs_history_add(&h, &v);
    }
    view_at(&v, &row, 0, 1, 5000000 + 5 * 2000ll, 0); /* the slice made anew: counters back at 0 */
    gs_history_add(&h, &v);
    cJSON *j = history(&h);
    cJSON *s = slice_of(j, "s0");
    assert_true(at(s, "gpu_ratio", 0) == -1); /* no rate for the first sample */
    assert_true(at(s, "latency_seconds", 0) == -1);
    for (int i = 1; i < 5; i++) {
        assert_float_equal(at(s, "gpu_ratio", i), 0.5, 1e-9);
        assert_float_equal(at(s, "latency_seconds", i), 0.002, 1e-12);
        assert_float_equal(at(s, "launches_per_second", i), 100.0, 1e-9);
        assert_float_equal(at(s, "share_ratio", i), 0.4, 1e-12);
    }
    assert_float_equal(at(s, "refused_per_second", 2), 0.5, 1e-9); /* 0 -> 1 refusal in 2 s */
    /* Counters that went back are no rate, and no requests no latency. */
    assert_true(at(s, "gpu_ratio", 5) == -1);
    assert_true(at(s, "latency_seconds", 5) == -1);
    assert_int_equal((int)cJSON_GetObjectItem(j, "interval_seconds")->valuedouble, 2);
    cJSON_Delete(j);
    gs_history_destroy(&h);
}

static void test_bounded_in_slices(void **st)
{
    (void)st;
    struct gs_history h;
    struct gs_view v;
    static struct gs_view_row rows[GS_HISTORY_SLICES + 36];
    assert_int_equal(gs_history_init(&h, 1), 0);
    /* 100 slices: the first 36 seen once, long ago; the other 64 seen since. */
    view_at(&v, rows, 0, 36, 1000000, 1);
    gs_history_add(&h, &v);
    view_at(&v, rows, 36, GS_HISTORY_SLICES, 1001000, 1);
    gs_history_add(&h, &v);
    view_at(&v, rows, 36, GS_HISTORY_SLICES, 1002000, 2);
    gs_history_add(&h, &v);
    cJSON *j = history(&h);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "slices")), GS_HISTORY_SLICES);
    assert_null(slice_of(j, "s0")); /* the least recently seen made room */
    assert_non_null(slice_of(j, "s36"));
    assert_non_null(slice_of(j, "s99"));
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(slice_of(j, "s99"), "t_ms")), 2);
    cJSON_Delete(j);
    gs_history_destroy(&h);
}

static void test_gone_slices_age_out(void **st)
{
    (void)st;
    struct gs_history h;
    struct gs_view v;
    struct gs_view_row rows[2];
    assert_int_equal(gs_history_init(&h, 1), 0);
    view_at(&v, rows, 0, 2, 1000000, 1);
    gs_history_add(&h, &v);
    /* s1 gone from the state root: kept while its samples are within the span... */
    view_at(&v, rows, 0, 1, 1000000 + GS_HISTORY_SAMPLES * 1000ll, 2);
    gs_history_add(&h, &v);
    cJSON *j = history(&h);
    assert_non_null(slice_of(j, "s1"));
    cJSON_Delete(j);
    /* ... and forgotten after. */
    view_at(&v, rows, 0, 1, 1000000 + GS_HISTORY_SAMPLES * 1000ll + 1000, 3);
    gs_history_add(&h, &v);
    j = history(&h);
    assert_null(slice_of(j, "s1"));
    assert_non_null(slice_of(j, "s0"));
    cJSON_Delete(j);
    gs_history_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_keeps_the_newest),
        cmocka_unit_test(test_rates_between_samples),
        cmocka_unit_test(test_bounded_in_slices),
        cmocka_unit_test(test_gone_slices_age_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
