/* The limits file: what gs_limits_write puts down, gs_limits_load reads back
 * unchanged, every field, from the one table that defines them; a value the
 * format has no name for is refused, not written as something else. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "contract/limits.h"

static char path[256];

static void test_round_trip(void **st)
{
    (void)st;
    struct gs_limits l, back;
    gs_error err;
    gs_limits_defaults(&l);
    l.memory = 3ull << 30;
    l.compute = 30;
    l.compute_mode = GS_COMPUTE_CAP;
    l.priority = GS_PRIO_CRITICAL;
    l.yield = GS_YIELD_SHRINK;
    l.green_sms = 64;
    l.guard_us = 600;
    l.sharing = GS_SHARING_MPS;
    l.mps_threads = 70;
    l.context_reserve = 608ull << 20;
    l.simulated = 1;
    snprintf(l.device, sizeof l.device, "GPU-1234");
    snprintf(l.slice_id, sizeof l.slice_id, "pod-a/main");
    assert_int_equal(gs_limits_write(path, &l, &err), 0);
    assert_int_equal(gs_limits_load(path, &back, &err), 0);
    assert_int_equal(back.version, GS_LIMITS_VERSION);
    assert_int_equal(back.memory, l.memory);
    assert_int_equal(back.compute, 30);
    assert_int_equal(back.compute_mode, GS_COMPUTE_CAP);
    assert_int_equal(back.priority, GS_PRIO_CRITICAL);
    assert_int_equal(back.yield, GS_YIELD_SHRINK);
    assert_int_equal(back.green_sms, 64);
    assert_int_equal(back.guard_us, 600);
    assert_int_equal(back.sharing, GS_SHARING_MPS);
    assert_int_equal(back.mps_threads, 70);
    assert_int_equal(back.context_reserve, l.context_reserve);
    assert_int_equal(back.simulated, 1);
    assert_string_equal(back.device, "GPU-1234");
    assert_string_equal(back.slice_id, "pod-a/main");
    /* People read it too: one "key = value" line per setting, names not numbers. */
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    assert_non_null(strstr(text, "\nyield = shrink\n"));
    assert_non_null(strstr(text, "\ngreen_sms = 64\n"));
    assert_non_null(strstr(text, "\nguard_us = 600\n"));
    assert_non_null(strstr(text, "\ncompute_mode = cap\n"));
    assert_non_null(strstr(text, "\npriority = critical\n"));
}

static void test_unnamed_value_refused(void **st)
{
    (void)st;
    struct gs_limits l;
    gs_error err;
    gs_limits_defaults(&l);
    unlink(path);
    l.yield = 7; /* no such yield */
    assert_true(gs_limits_write(path, &l, &err) < 0);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(access(path, F_OK), -1); /* nothing half-written left behind */
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/gs-limits-test-%ld", (long)getpid());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_unnamed_value_refused),
    };
    int rc = cmocka_run_group_tests_name("limits", tests, NULL, NULL);
    unlink(path);
    return rc;
}
