/* The interposer's clocks: CLOCK_MONOTONIC, one clock for every process of
 * the host, so every tenant lays out the same windows; its coarse form for
 * the launch path; any other clock a module stamps with, in ns. */
#ifndef GS_INTERPOSER_CLOCK_H
#define GS_INTERPOSER_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gs_ts_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* ns as a timespec (an absolute time of gs_clock_ns, for a timed wait). */
static inline struct timespec gs_ns_ts(uint64_t ns)
{
    return (struct timespec){(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
}

/* Clock clk now, in ns (the vDSO: no system call); 0 if the kernel lacks it. */
static inline uint64_t gs_clock_read_ns(clockid_t clk)
{
    struct timespec ts;
    return clock_gettime(clk, &ts) == 0 ? gs_ts_ns(&ts) : 0;
}

/* Now, in ns. */
static inline uint64_t gs_clock_ns(void)
{
    return gs_clock_read_ns(CLOCK_MONOTONIC);
}

/* CLOCK_MONOTONIC as of the kernel's last timekeeping update, once a timer
 * tick (clock_getres says how long): behind gs_clock_ns by a tick or a little
 * more, never ahead, and read without the CPU's time-stamp counter. Next to a
 * real driver's launch a precise read costs more than its own time on some
 * hosts (docs/benchmarks.md): the launch path asks the coarse clock first
 * where its lag cannot matter. 0 where the kernel lacks it. */
static inline uint64_t gs_clock_coarse_ns(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    return gs_clock_read_ns(CLOCK_MONOTONIC_COARSE);
#else
    return 0;
#endif
}

/* How far the launch path trusts gs_clock_coarse_ns: a coarse reading more
 * than this slack before a time is surely before it by the precise clock.
 * The coarse clock lags by up to a tick plus however late the tick's update
 * ran (1.7 ms on top of a 4 ms tick on a KVM guest), so: three ticks to
 * start with (0, the precise clock only, where there is no coarse clock or
 * its tick is longer than max_ns), then gs_clock_coarse_fit. */
static inline uint64_t gs_clock_coarse_slack_ns(uint64_t max_ns)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec r;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &r) == 0 && gs_clock_coarse_ns()) {
        uint64_t tick = gs_ts_ns(&r);
        if (tick && tick <= max_ns)
            return 3 * tick;
    }
#endif
    (void)max_ns;
    return 0;
}

/* The slack after the coarse clock was seen `lag` behind the precise one
 * (read just after it): at least twice the worst lag seen; 0 for good once
 * that would exceed max_ns. */
static inline uint64_t gs_clock_coarse_fit(uint64_t slack, uint64_t lag, uint64_t max_ns)
{
    if (!slack || 2 * lag <= slack)
        return slack;
    return 2 * lag > max_ns ? 0 : 2 * lag;
}

/* Sleeps until t (ns of gs_clock_ns), whatever signals interrupt it. */
static inline void gs_clock_sleep_until(uint64_t t)
{
    struct timespec ts = gs_ns_ts(t);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

#endif
