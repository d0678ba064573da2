#include "ptrmap.h"

#include <sys/mman.h>

#define EMPTY 0u
#define GONE 1u
#define SMALL_SLOTS (1u << 13) /* 128 KiB: stays in L2 */
#define SMALL_PROBE 32

static inline size_t slot_of(const struct gs_ptrmap_level *l, uint64_t k)
{
    /* Driver pointers are aligned and clustered: mix all bits (splitmix64 finaliser). */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return (size_t)k & l->mask;
}

static int level_init(struct gs_ptrmap_level *l, size_t slots, size_t max_probe)
{
    void *p = mmap(NULL, slots * sizeof(struct gs_ptrmap_entry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    l->e = p;
    l->mask = slots - 1;
    l->max_probe = max_probe;
    return 0;
}

static void level_free(struct gs_ptrmap_level *l)
{
    if (l->e)
        munmap(l->e, (l->mask + 1) * sizeof(struct gs_ptrmap_entry));
    l->e = NULL;
}

int gs_ptrmap_init(struct gs_ptrmap *m, size_t capacity)
{
    if (level_init(&m->small, SMALL_SLOTS, SMALL_PROBE) < 0)
        return -1;
    if (level_init(&m->big, capacity, capacity) < 0) {
        level_free(&m->small);
        return -1;
    }
    return 0;
}

void gs_ptrmap_free(struct gs_ptrmap *m)
{
    level_free(&m->small);
    level_free(&m->big);
}

static int level_put(struct gs_ptrmap_level *l, uint64_t key, uint64_t val)
{
    size_t i = slot_of(l, key);
    for (size_t n = 0; n < l->max_probe; n++, i = (i + 1) & l->mask) {
        struct gs_ptrmap_entry *e = &l->e[i];
        uint64_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
        if (cur != EMPTY && cur != GONE)
            continue;
        /* Key first, then value: nobody looks this key up before put returns
         * (the application cannot free an address it has not been given),
         * and writing the value first would let a racing inserter that loses
         * the slot overwrite the winner's value. */
        if (atomic_compare_exchange_strong_explicit(&e->key, &cur, key, memory_order_acq_rel,
                                                    memory_order_relaxed)) {
            atomic_store_explicit(&e->val, val, memory_order_release);
            return 0;
        }
    }
    return -1;
}

/* 1 found, 0 not here, -1 not here and the probe ended on an empty slot. */
static int level_find(struct gs_ptrmap_level *l, uint64_t key, int take, uint64_t *val)
{
    size_t i = slot_of(l, key);
    for (size_t n = 0; n < l->max_probe; n++, i = (i + 1) & l->mask) {
        struct gs_ptrmap_entry *e = &l->e[i];
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

int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t val)
{
    if (level_put(&m->small, key, val) == 0)
        return 0;
    return level_put(&m->big, key, val);
}

static int find(struct gs_ptrmap *m, uint64_t key, int take, uint64_t *val)
{
    if (level_find(&m->small, key, take, val))
        return 1;
    return level_find(&m->big, key, take, val);
}

int gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *val)
{
    return find(m, key, 0, val);
}
int gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *val)
{
    return find(m, key, 1, val);
}
