/* A lock-free open-addressing map from a driver address or handle to a
 * 64-bit value, for the interposer's hot path (an allocation records its
 * size, a free looks it up): no lock, and no system call except when the map
 * grows a level.
 *
 * Design: levels of doubling size, each probed a bounded number of slots.
 * Level 0 (8192 slots, 128 KiB) stays in cache and takes the common case, a
 * few thousand live allocations. A key that finds no free slot within its
 * bounded probe of one level goes to the next, which is mapped when it is
 * first needed (64 Ki slots, then twice the size of the one before, up to
 * the capacity given at init). So every operation touches at most
 * GS_PTRMAP_LEVELS x GS_PTRMAP_PROBE slots whatever the number of live keys
 * (O(1); before, a nearly full one-level map probed the whole table, 1.8 ms
 * an allocation past a million), and memory follows the live keys (each
 * level is mapped MAP_NORESERVE and only when the one before overflows),
 * where one level big enough for millions would be touched all over by a
 * hashed key. Past the last level a put fails: the caller must then refuse
 * the allocation (memory.c frees what the driver gave and returns
 * CUDA_ERROR_OUT_OF_MEMORY), never let it go uncounted. A level fills to
 * about 80 % before its probes overflow, so the usable capacity is somewhat
 * below the slots mapped.
 *
 * Keys and values sit side by side, so one probe touches one cache line.
 * Keys 0, 1 and 2 are reserved (empty, removed, being written); driver
 * pointers and handles are never 0, 1 or 2. Each key is inserted at most once while live, which is
 * what the driver guarantees for the addresses and handles it hands out. */
#ifndef GS_PTRMAP_H
#define GS_PTRMAP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define GS_PTRMAP_LEVELS 16
#define GS_PTRMAP_PROBE 32

struct gs_ptrmap_entry {
    _Atomic uint64_t key;
    _Atomic uint64_t val;
};

struct gs_ptrmap {
    _Atomic(struct gs_ptrmap_entry *) level[GS_PTRMAP_LEVELS]; /* NULL until first needed */
    size_t slots[GS_PTRMAP_LEVELS];                            /* each a power of two */
    _Atomic uint8_t full[GS_PTRMAP_LEVELS]; /* a put's probe overflowed there since a take */
    int nlevels;
    size_t capacity; /* as given to init: the bound on the slots of all levels */
};

/* capacity bounds the slots of all levels together (at least 64); level 0
 * is mapped now, the others when needed. 0, or -1 when level 0 cannot be. */
int gs_ptrmap_init(struct gs_ptrmap *m, size_t capacity);
void gs_ptrmap_free(struct gs_ptrmap *m);
/* 0 on success, -1 when the map is full (every level's probe for key). */
int gs_ptrmap_put(struct gs_ptrmap *m, uint64_t key, uint64_t val);
/* Looks up key; 1 and *val when found, 0 when not. */
int gs_ptrmap_get(struct gs_ptrmap *m, uint64_t key, uint64_t *val);
/* Removes key; 1 and *val when it was there, 0 when not. */
int gs_ptrmap_take(struct gs_ptrmap *m, uint64_t key, uint64_t *val);
/* Takes every entry whose value pred accepts, as the walk finds them (all
 * levels, in slot order; entries put or taken meanwhile may or may not be
 * seen), each from the very slot where its value was read, and calls taken
 * with that value; returns how many. For the rare walk (a CUDA context's
 * end), not the hot path: it reads every slot of every level mapped. (A key
 * taken and put again into the same slot between the walk's read and its
 * take would be taken with the value read: two frees and allocations of one
 * address within a few instructions of the walk.) */
size_t gs_ptrmap_take_if(struct gs_ptrmap *m, int (*pred)(uint64_t val, void *arg),
                         void (*taken)(uint64_t val, void *arg), void *arg);

#endif
