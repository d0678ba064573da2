/* A lock-free open-addressing map from a driver address or handle to a
 * 64-bit value, for the interposer's hot path (an allocation records its
 * size, a free looks it up): no lock, no system call after creation.
 *
 * Two levels: a small table that stays in cache (the common case, a few
 * thousand live allocations) with a bounded probe, and a large one, mapped
 * lazily, that takes what does not fit. Keys and values sit side by side, so
 * one operation touches one cache line.
 * Keys 0 and 1 are reserved (empty, removed); driver pointers and handles
 * are never 0 or 1. Each key is inserted at most once while live, which is
 * what the driver guarantees for the addresses and handles it hands out. */
#ifndef GS_PTRMAP_H
#define GS_PTRMAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct gs_ptrmap_entry {
    _Atomic uint64_t key;
    _Atomic uint64_t val;
};

struct gs_ptrmap_level {
    struct gs_ptrmap_entry *e;
    size_t mask;
    size_t max_probe;
};

struct gs_ptrmap {
    struct gs_ptrmap_level small, big;
};

/* capacity (a power of two) bounds the big level; memory is mapped lazily. */
int gs_ptrmap_init(struct gs_ptrmap *m, size_t capacity);
void gs_ptrmap_free(struct gs_ptrmap *m);
/* 0 on success, -1 when the map is full. */
int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t val);
/* Looks up key; 1 and *val when found, 0 when not. */
int gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *val);
/* Removes key; 1 and *val when it was there, 0 when not. */
int gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *val);

#endif
