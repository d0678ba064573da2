#include "ptrmap.h"

#include <sys/mman.h>

#define EMPTY 0u
#define GONE 1u
#define BUSY 2u                 /* claimed by a put that has not written its value yet */
#define FIRST_SLOTS (1u << 13)  /* level 0: 128 KiB, stays in L2 */
#define SECOND_SLOTS (1u << 16) /* level 1; each later one four times the one before */
#define MIN_SLOTS 64u

static inline size_t slot_of(uint64_t k, size_t mask)
{
    /* Driver pointers are aligned and clustered: mix all bits (splitmix64 finaliser). */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return (size_t)k & mask;
}

static struct gs_ptrmap_entry *map_level(size_t slots)
{
    void *p = mmap(NULL, slots * sizeof(struct gs_ptrmap_entry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t pow2_floor(size_t n)
{
    size_t p = 1;
    while (p <= n / 2)
        p *= 2;
    return p;
}

int gs_ptrmap_init(struct gs_ptrmap *m, size_t capacity)
{
    *m = (struct gs_ptrmap){.capacity = capacity};
    size_t left = capacity < MIN_SLOTS ? MIN_SLOTS : capacity;
    size_t want = FIRST_SLOTS;
    while (left >= MIN_SLOTS && m->nlevels < GS_PTRMAP_LEVELS) {
        size_t n = want <= left ? want : pow2_floor(left);
        m->slots[m->nlevels++] = n;
        left -= n;
        if (n < want)
            break; /* the capacity's remainder: no smaller levels after it */
        want = m->nlevels == 1 ? SECOND_SLOTS : n * 4;
    }
    struct gs_ptrmap_entry *e = map_level(m->slots[0]);
    if (!e)
        return -1;
    atomic_store_explicit(&m->level[0], e, memory_order_release);
    return 0;
}

void gs_ptrmap_free(struct gs_ptrmap *m)
{
    for (int i = 0; i < m->nlevels; i++) {
        struct gs_ptrmap_entry *e = atomic_exchange(&m->level[i], NULL);
        if (e)
            munmap(e, m->slots[i] * sizeof *e);
    }
}

/* Level i, mapped now if it is not yet (racing threads: one mapping wins). */
static struct gs_ptrmap_entry *level_get(struct gs_ptrmap *m, int i)
{
    struct gs_ptrmap_entry *e = atomic_load_explicit(&m->level[i], memory_order_acquire);
    if (e)
        return e;
    struct gs_ptrmap_entry *fresh = map_level(m->slots[i]);
    if (!fresh)
        return NULL;
    if (atomic_compare_exchange_strong(&m->level[i], &e, fresh))
        return fresh;
    munmap(fresh, m->slots[i] * sizeof *fresh);
    return e;
}

static int level_put(struct gs_ptrmap_entry *t, size_t mask, uint64_t key, uint64_t val)
{
    size_t i = slot_of(key, mask);
    size_t probe = mask + 1 < GS_PTRMAP_PROBE ? mask + 1 : GS_PTRMAP_PROBE;
    for (size_t n = 0; n < probe; n++, i = (i + 1) & mask) {
        struct gs_ptrmap_entry *e = &t[i];
        uint64_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
        if (cur != EMPTY && cur != GONE)
            continue;
        /* The slot is claimed first (BUSY), then the value written, then the
         * key published: a racing inserter that loses the slot cannot
         * overwrite the winner's value, and a reader that sees the key sees
         * its value (gs_ptrmap_take_if reads a slot's key and value together). */
        if (atomic_compare_exchange_strong_explicit(&e->key, &cur, (uint64_t)BUSY,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            atomic_store_explicit(&e->val, val, memory_order_relaxed);
            atomic_store_explicit(&e->key, key, memory_order_release);
            return 0;
        }
    }
    return -1;
}

/* 1 found, 0 not in this level (a put never goes past an empty slot, nor
 * past the bounded probe). */
static int level_find(struct gs_ptrmap_entry *t, size_t mask, uint64_t key, int take, uint64_t *val)
{
    size_t i = slot_of(key, mask);
    size_t probe = mask + 1 < GS_PTRMAP_PROBE ? mask + 1 : GS_PTRMAP_PROBE;
    for (size_t n = 0; n < probe; n++, i = (i + 1) & mask) {
        struct gs_ptrmap_entry *e = &t[i];
        uint64_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
        if (cur == EMPTY)
            return 0;
        if (cur != key)
            continue;
        uint64_t v = atomic_load_explicit(&e->val, memory_order_acquire);
        /* Two threads freeing one pointer: only one wins the key. */
        if (take && !atomic_compare_exchange_strong(&e->key, &cur, (uint64_t)GONE))
            return 0;
        if (val)
            *val = v;
        return 1;
    }
    return 0;
}

/* Puts into the levels not marked full (marked: pass 0 skips them, pass 1
 * tries only them). A level is marked when a probe in it overflows and
 * unmarked when a key in it is taken, so a put does not scan the full
 * levels below the one with room; a mark left stale by a race only sends
 * puts one level up, and pass 1 still finds its room before refusing. */
static int put_pass(struct gs_ptrmap *m, uint64_t key, uint64_t val, int marked)
{
    for (int i = 0; i < m->nlevels; i++) {
        if (atomic_load_explicit(&m->full[i], memory_order_relaxed) != marked)
            continue;
        struct gs_ptrmap_entry *t = level_get(m, i);
        if (!t)
            return -1; /* cannot map the next level: as full */
        if (level_put(t, m->slots[i] - 1, key, val) == 0)
            return 0;
        if (!marked)
            atomic_store_explicit(&m->full[i], 1, memory_order_relaxed);
    }
    return -1;
}

int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t val)
{
    if (put_pass(m, key, val, 0) == 0)
        return 0;
    return put_pass(m, key, val, 1);
}

static int find(struct gs_ptrmap *m, uint64_t key, int take, uint64_t *val)
{
    for (int i = 0; i < m->nlevels; i++) {
        struct gs_ptrmap_entry *t = atomic_load_explicit(&m->level[i], memory_order_acquire);
        if (!t)
            return 0; /* levels are made in order: none after this one either */
        if (level_find(t, m->slots[i] - 1, key, take, val)) {
            if (take && atomic_load_explicit(&m->full[i], memory_order_relaxed))
                atomic_store_explicit(&m->full[i], 0, memory_order_relaxed);
            return 1;
        }
    }
    return 0;
}

int gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *val)
{
    return find(m, key, 0, val);
}
int gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *val)
{
    return find(m, key, 1, val);
}

size_t gs_ptrmap_take_if(struct gs_ptrmap *m, int (*pred)(uint64_t val, void *arg),
                         void (*taken)(uint64_t val, void *arg), void *arg)
{
    size_t n = 0;
    for (int i = 0; i < m->nlevels; i++) {
        struct gs_ptrmap_entry *t = atomic_load_explicit(&m->level[i], memory_order_acquire);
        if (!t)
            break; /* levels are made in order */
        for (size_t j = 0; j < m->slots[i]; j++) {
            uint64_t k = atomic_load_explicit(&t[j].key, memory_order_acquire);
            if (k == EMPTY || k == GONE || k == BUSY)
                continue;
            uint64_t v = atomic_load_explicit(&t[j].val, memory_order_acquire);
            /* This slot, not the first of this key's (a key freed and handed
             * out again may stand twice while the walk runs). */
            if (!pred(v, arg) || !atomic_compare_exchange_strong(&t[j].key, &k, (uint64_t)GONE))
                continue;
            if (atomic_load_explicit(&m->full[i], memory_order_relaxed))
                atomic_store_explicit(&m->full[i], 0, memory_order_relaxed);
            taken(v, arg);
            n++;
        }
    }
    return n;
}
