/* The interposer's address map (src/interposer/ptrmap.c): millions of live
 * keys, a full map, and threads at once. No clock: with the bounded probes
 * each case's cost is bounded by its operation count. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "interposer/ptrmap.h"

/* Device pointers as a driver hands them out: aligned and clustered. */
static uint64_t key_of(uint64_t i)
{
    return (1ull << 48) + i * 512;
}

/* 2 million live keys (the issue saw each allocation probe the whole table
 * past a million), all found, all taken, and room again after. */
static void test_millions_of_live_keys(void **st)
{
    (void)st;
    struct gs_ptrmap m;
    assert_int_equal(gs_ptrmap_init(&m, 1u << 24), 0);
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
    enum { N = 400000 }; /* still four levels deep, in a sanitizer's time */
#else
    enum { N = 2000000 };
#endif
    for (int round = 0; round < 2; round++) {
        for (uint64_t i = 0; i < N; i++)
            if (gs_ptrmap_put(&m, key_of(i), i + 7) != 0)
                fail_msg("round %d: put %llu of %d failed", round, (unsigned long long)i, N);
        uint64_t v;
        for (uint64_t i = 0; i < N; i += 7) {
            assert_int_equal(gs_ptrmap_get(&m, key_of(i), &v), 1);
            assert_int_equal(v, i + 7);
        }
        assert_int_equal(gs_ptrmap_get(&m, key_of(N), &v), 0);
        for (uint64_t i = 0; i < N; i++)
            if (gs_ptrmap_take(&m, key_of(i), &v) != 1 || v != i + 7)
                fail_msg("round %d: take %llu", round, (unsigned long long)i);
        assert_int_equal(gs_ptrmap_get(&m, key_of(1), &v), 0);
    }
    gs_ptrmap_free(&m);
}

/* The walk a context's end makes: every live entry offered once, in every
 * level (past level 0's 8192 slots), none of those taken before; the ones
 * accepted taken from their own slot, even where their key stands twice
 * (freed and handed out again while the walk runs). */
struct walk {
    uint64_t seen, sum, taken;
};

static int even_value(uint64_t val, void *arg)
{
    struct walk *w = arg;
    w->seen++;
    w->sum += val;
    return val % 2 == 0;
}

static void count_taken(uint64_t val, void *arg)
{
    (void)val;
    ((struct walk *)arg)->taken++;
}

static void test_walk_takes_what_it_accepts(void **st)
{
    (void)st;
    struct gs_ptrmap m;
    assert_int_equal(gs_ptrmap_init(&m, 1u << 20), 0);
    enum { N = 50000 };
    uint64_t v, sum = 0, live = 0, even = 0;
    for (uint64_t i = 0; i < N; i++)
        assert_int_equal(gs_ptrmap_put(&m, key_of(i), i), 0);
    for (uint64_t i = 0; i < N; i += 5) /* taken before the walk: not seen */
        assert_int_equal(gs_ptrmap_take(&m, key_of(i), &v), 1);
    for (uint64_t i = 0; i < N; i++)
        if (i % 5) {
            live++;
            even += i % 2 == 0;
            sum += i;
        }
    struct walk w = {0};
    assert_int_equal(gs_ptrmap_take_if(&m, even_value, count_taken, &w), even);
    assert_int_equal(w.seen, live);
    assert_int_equal(w.sum, sum);
    assert_int_equal(w.taken, even);
    for (uint64_t i = 0; i < N; i++) /* the even ones went in the walk, the odd stay */
        assert_int_equal(gs_ptrmap_get(&m, key_of(i), &v), i % 5 && i % 2);
    /* One key twice (a stale entry left by a context's end, and the live one
     * of the same address): the walk takes the one whose value it accepts. */
    uint64_t k = key_of(3);
    assert_int_equal(gs_ptrmap_take(&m, k, &v), 1);
    assert_int_equal(gs_ptrmap_put(&m, k, 7), 0);  /* first in probe order: odd, stays */
    assert_int_equal(gs_ptrmap_put(&m, k, 10), 0); /* the second: even, taken */
    w = (struct walk){0};
    assert_int_equal(gs_ptrmap_take_if(&m, even_value, count_taken, &w), 1);
    assert_int_equal(gs_ptrmap_take(&m, k, &v), 1);
    assert_int_equal(v, 7);
    gs_ptrmap_free(&m);
}

/* A map of 4096 slots refuses past what it holds (the caller then refuses
 * the allocation), keeps every key it took, and takes more once freed. */
static void test_full_map_refuses(void **st)
{
    (void)st;
    struct gs_ptrmap m;
    assert_int_equal(gs_ptrmap_init(&m, 4096), 0);
    uint64_t n = 0, row = 0, tries = 0;
    for (uint64_t i = 0; row < 1000; i++, tries++) {
        if (gs_ptrmap_put(&m, key_of(i), i) == 0) {
            n++;
            row = 0;
        } else {
            row++;
        }
    }
    assert_true(n > 3000 && n <= 4096);
    uint64_t found = 0, v;
    for (uint64_t i = 0; i < tries; i++)
        found += gs_ptrmap_get(&m, key_of(i), &v);
    assert_int_equal(found, n);
    for (uint64_t i = 0; i < tries; i++)
        gs_ptrmap_take(&m, key_of(i), &v);
    for (uint64_t i = 0; i < 2048; i++)
        assert_int_equal(gs_ptrmap_put(&m, key_of(tries + i), i), 0);
    gs_ptrmap_free(&m);
}

struct worker {
    struct gs_ptrmap *m;
    uint64_t base;
    int bad;
};

static void *churn(void *p)
{
    struct worker *w = p;
    uint64_t v;
    for (uint64_t round = 0; round < 4; round++) {
        for (uint64_t i = 0; i < 20000; i++)
            w->bad += gs_ptrmap_put(w->m, key_of(w->base + i), i) != 0;
        for (uint64_t i = 0; i < 20000; i++)
            w->bad += gs_ptrmap_take(w->m, key_of(w->base + i), &v) != 1 || v != i;
    }
    return NULL;
}

/* Threads inserting and removing at once grow the map together (levels
 * mapped by whoever needs them first) and lose nothing. */
static void test_threads_at_once(void **st)
{
    (void)st;
    struct gs_ptrmap m;
    assert_int_equal(gs_ptrmap_init(&m, 1u << 20), 0);
    pthread_t th[4];
    struct worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (struct worker){.m = &m, .base = (uint64_t)i << 32};
        assert_int_equal(pthread_create(&th[i], NULL, churn, &w[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].bad, 0);
    }
    gs_ptrmap_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_millions_of_live_keys),
        cmocka_unit_test(test_full_map_refuses),
        cmocka_unit_test(test_walk_takes_what_it_accepts),
        cmocka_unit_test(test_threads_at_once),
    };
    return cmocka_run_group_tests_name("interposer_ptrmap", tests, NULL, NULL);
}
