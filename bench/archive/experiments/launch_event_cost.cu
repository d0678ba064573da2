// Session 14 (issue 20): what makes a launch slower in a process with a compute
// share? No gpuslice here: libcuda alone, in one process, the same empty-kernel
// loop as bench/overhead_inproc.cu (5,000 launches on the legacy stream per round,
// a synchronisation after each, not timed), with one change per variant:
//   plain      nothing else
//   evN        an event (timing disabled) recorded after every N-th launch, as a
//              share's ring does (N = 4, 16, 64, 1024)
//   evN_query  the same, and each event queried once when the next is recorded
//   clock      clock_gettime(CLOCK_MONOTONIC) before every launch, as the
//              interposer's hot path did before session 14
//   coarse     clock_gettime(CLOCK_MONOTONIC_COARSE) instead, as it does now
//   atomic     a locked add on a shared counter before every launch
// Variants take turns round by round; the median per variant over the rounds.
// Also the host's clock_gettime and the locked add on their own (ns per call).
//
//   nvcc -O2 -o /tmp/gs-evcost bench/archive/experiments/launch_event_cost.cu -lcuda
//   taskset -c 2 /tmp/gs-evcost [rounds]      # one JSON line
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

__global__ void empty_kernel() {}

static double now_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static std::atomic<unsigned long> counter;

struct variant {
    std::string name;
    int every;  // event after every N-th launch (0: none)
    bool query; // query the previous event when recording the next
    int clock;  // clock_gettime before each launch: 0 none, 1 precise, 2 coarse
    bool atom;  // locked add before each launch
};

static double run_round(const variant &v, CUfunction k, CUevent *ev, int n)
{
    double a = now_us();
    int slot = 0;
    for (int i = 0; i < n; i++) {
        if (v.clock) {
            timespec t;
            clock_gettime(v.clock == 1 ? CLOCK_MONOTONIC : CLOCK_MONOTONIC_COARSE, &t);
        }
        if (v.atom)
            counter.fetch_add(1);
        cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, 0, nullptr, nullptr);
        if (v.every && (i + 1) % v.every == 0) {
            if (v.query)
                cuEventQuery(ev[(slot + 3) % 4]);
            cuEventRecord(ev[slot], 0);
            slot = (slot + 1) % 4;
        }
    }
    double b = now_us();
    cudaDeviceSynchronize();
    return (b - a) / n;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 31;
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "no CUDA\n");
        return 1;
    }
    CUfunction k;
    if (cudaGetFuncBySymbol((cudaFunction_t *)&k, (const void *)empty_kernel) != cudaSuccess) {
        fprintf(stderr, "cudaGetFuncBySymbol failed\n");
        return 1;
    }
    CUevent ev[4];
    for (auto &e : ev)
        cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    std::vector<variant> vs = {
        {"plain", 0, false, 0, false},      {"ev1024", 1024, false, 0, false},
        {"ev64", 64, false, 0, false},      {"ev16", 16, false, 0, false},
        {"ev4", 4, false, 0, false},        {"ev16_query", 16, true, 0, false},
        {"clock", 0, false, 1, false},      {"coarse", 0, false, 2, false},
        {"atomic", 0, false, 0, true},      {"plain_again", 0, false, 0, false},
    };
    for (auto &v : vs) // warm every path
        run_round(v, k, ev, 2000);
    std::vector<std::vector<double>> t(vs.size());
    for (int r = 0; r < rounds; r++)
        for (size_t j = 0; j < vs.size(); j++) {
            size_t i = (j + r) % vs.size(); // rotate the order
            t[i].push_back(run_round(vs[i], k, ev, 5000));
        }
    // The host's own costs, without the GPU.
    const int m = 2000000;
    double a = now_us();
    for (int i = 0; i < m; i++) {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
    }
    double clock_ns = (now_us() - a) * 1e3 / m;
    a = now_us();
    for (int i = 0; i < m; i++) {
        timespec ts;
        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    }
    double coarse_ns = (now_us() - a) * 1e3 / m;
    a = now_us();
    for (int i = 0; i < m; i++)
        counter.fetch_add(1);
    double atomic_ns = (now_us() - a) * 1e3 / m;
    printf("{\"rounds\": %d, \"clock_gettime_ns\": %.1f, \"coarse_ns\": %.1f, "
           "\"locked_add_ns\": %.1f",
           rounds, clock_ns, coarse_ns, atomic_ns);
    for (size_t i = 0; i < vs.size(); i++)
        printf(", \"%s_us\": %.4f", vs[i].name.c_str(), median(t[i]));
    printf("}\n");
    return 0;
}
