/* CLOCK_MONOTONIC for the interposer's modules: one clock for every
 * process of the host, so every tenant lays out the same windows. */
#ifndef GS_INTERPOSER_CLOCK_H
#define GS_INTERPOSER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Now, in ns (the vDSO: no system call). */
static inline uint64_t gs_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Sleeps until t (ns of gs_clock_ns), whatever signals interrupt it. */
static inline void gs_clock_sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

#endif
