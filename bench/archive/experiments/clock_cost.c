/* Session 34 (issue 20): what each way of telling the time costs a loop that, like a
 * driver's launch, has just stored to a spread of memory (KB given; 0: none):
 * CLOCK_MONOTONIC_COARSE, CLOCK_MONOTONIC (the vDSO: a fenced counter read) and an
 * unfenced rdtsc, each as the extra ns per iteration over the loop alone; medians of 7.
 *   cc -O2 -o /tmp/clock_cost bench/archive/experiments/clock_cost.c && /tmp/clock_cost 64 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

static volatile char buf[1 << 20];
static volatile uint64_t sink;

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int kb = argc > 1 ? atoi(argv[1]) : 64, n = 200000;
    if (kb < 0 || kb > 1024)
        kb = 64;
    static const char *name[4] = {"none", "coarse", "precise", "rdtsc"};
    double per[4][7];
    for (int rep = 0; rep < 7; rep++)
        for (int m = 0; m < 4; m++) {
            struct timespec t;
            double a = now_ns();
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < kb * 1024; j += 64)
                    buf[j]++;
                if (m == 1) {
                    clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
                    sink += (uint64_t)t.tv_nsec;
                } else if (m == 2) {
                    clock_gettime(CLOCK_MONOTONIC, &t);
                    sink += (uint64_t)t.tv_nsec;
                } else if (m == 3) {
                    sink += __rdtsc();
                }
            }
            per[m][rep] = (now_ns() - a) / n;
        }
    for (int m = 0; m < 4; m++)
        qsort(per[m], 7, sizeof(double), cmp);
    printf("clock_cost kb=%d: loop %.1f ns", kb, per[0][3]);
    for (int m = 1; m < 4; m++)
        printf("; %s +%.1f ns", name[m], per[m][3] - per[0][3]);
    printf("\n");
    return 0;
}
