#include "ptrmap.h"

#include <sys/mman.h>

#define EMPTY 0u
#define GONE 1u

static inline size_t slot_of(const struct gs_ptrmap *m, uint64_t k)
{
    /* Driver pointers are aligned and clustered: mix all bits (splitmix64 finaliser). */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return (size_t)k & m->mask;
}

int gs_ptrmap_init(struct gs_ptrmap *m, size_t capacity)
{
    size_t bytes = capacity * sizeof(uint64_t);
    void *k = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (k == MAP_FAILED)
        return -1;
    void *v = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (v == MAP_FAILED) {
        munmap(k, bytes);
        return -1;
    }
    m->keys = k;
    m->vals = v;
    m->mask = capacity - 1;
    return 0;
}

void gs_ptrmap_free(struct gs_ptrmap *m)
{
    if (!m->keys)
        return;
    size_t bytes = (m->mask + 1) * sizeof(uint64_t);
    munmap((void *)m->keys, bytes);
    munmap((void *)m->vals, bytes);
    m->keys = NULL;
    m->vals = NULL;
}

int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t val)
{
    size_t i = slot_of(m, key);
    for (size_t n = 0; n <= m->mask; n++, i = (i + 1) & m->mask) {
        uint64_t cur = atomic_load_explicit(&m->keys[i], memory_order_acquire);
        if (cur != EMPTY && cur != GONE)
            continue;
        /* Key first, then value: nobody looks this key up before put returns
         * (the application cannot free an address it has not been given),
         * and writing the value first would let a racing inserter that loses
         * the slot overwrite the winner's value. */
        if (atomic_compare_exchange_strong_explicit(&m->keys[i], &cur, key, memory_order_acq_rel,
                                                    memory_order_relaxed)) {
            atomic_store_explicit(&m->vals[i], val, memory_order_release);
            return 0;
        }
    }
    return -1;
}

static int find(struct gs_ptrmap *m, uint64_t key, int take, uint64_t *val)
{
    size_t i = slot_of(m, key);
    for (size_t n = 0; n <= m->mask; n++, i = (i + 1) & m->mask) {
        uint64_t cur = atomic_load_explicit(&m->keys[i], memory_order_acquire);
        if (cur == EMPTY)
            return 0;
        if (cur != key)
            continue;
        uint64_t v = atomic_load_explicit(&m->vals[i], memory_order_acquire);
        if (take) {
            /* Two threads freeing one pointer: only one wins the key. */
            if (!atomic_compare_exchange_strong(&m->keys[i], &cur, (uint64_t)GONE))
                return 0;
        }
        if (val)
            *val = v;
        return 1;
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
