/* What the host's calls on the launch path cost, each: the precise and the
 * coarse monotonic clock, a pread of a ledger header's size from a file in
 * /tmp, getppid (a bare system call); and the clock source the kernel uses.
 *   cc -O2 -o /tmp/host-call-cost bench/archive/experiments/host_call_cost.c
 *   /tmp/host-call-cost */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { N = 1000000 };

static double ns_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(void)
{
    char src[128] = "?";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f && fgets(src, sizeof src, f))
        for (char *p = src; *p; p++)
            if (*p == '\n')
                *p = '\0';
    if (f)
        fclose(f);
    char path[] = "/tmp/host-call-cost-XXXXXX";
    int fd = mkstemp(path);
    char buf[4096] = {0};
    if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        return 1;
    unlink(path);
    struct timespec t;
    volatile long sink = 0;
    double a = ns_now();
    for (int i = 0; i < N; i++) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        sink += t.tv_nsec;
    }
    double mono = (ns_now() - a) / N;
    a = ns_now();
    for (int i = 0; i < N; i++) {
        clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
        sink += t.tv_nsec;
    }
    double coarse = (ns_now() - a) / N;
    a = ns_now();
    for (int i = 0; i < N; i++)
        sink += pread(fd, buf, 256, 0);
    double rd = (ns_now() - a) / N;
    a = ns_now();
    for (int i = 0; i < N; i++)
        sink += getppid();
    double sys = (ns_now() - a) / N;
    printf("clocksource %s: CLOCK_MONOTONIC %.1f ns, _COARSE %.1f ns, pread 256 B %.1f ns, "
           "getppid %.1f ns\n",
           src, mono, coarse, rd, sys);
    return sink == 42;
}
