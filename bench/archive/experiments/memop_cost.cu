// Session 32 (issue 20): what each call of a best-effort tenant's marks costs the host
// next to an idle critical tenant. No gpuslice here: libcuda alone, in one process, the
// empty-kernel loop of launch_event_cost.cu (5,000 launches on the legacy stream per
// round, a synchronisation after each, not timed), with one change per variant, after
// every 16th launch:
//   plain        nothing else
//   write16      cuStreamWriteValue32 of a fresh value into a word of a page-locked
//                page mapped for the device (a mark in memory)
//   write16_load the same, and the previous mark's word read (a volatile load)
//   ev16         an event recorded (timing disabled)
//   ev16_query   the same, and the previous event queried (a mark as an event)
//   wait16       cuStreamWaitValue32 (EQ) on a word that already holds the value (a
//                held measure's wait, as far as the host sees it)
// and, after every launch:
//   touchN       a load from each of N cache lines of the process's own state (the
//                same lines every time, 64-byte apart), as a hook's bookkeeping does
//                between the driver's launches: what the driver's launch leaves of
//                them in the CPU's caches (N = 1, 4, 8, 16, 32)
// Variants take turns round by round (the order rotated); the median per variant. A
// call's own cost: (variant - plain) x 16 (touchN: per launch).
//
//   nvcc -O2 -o /tmp/gs-memop bench/archive/experiments/memop_cost.cu -lcuda
//   taskset -c 2 /tmp/gs-memop [rounds]      # one JSON line
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda.h>
#include <cuda_runtime.h>
#include <string>
#include <sys/mman.h>
#include <vector>

__global__ void empty_kernel() {}

static double now_us()
{
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

enum op { NONE, WRITE, WRITE_LOAD, EVENT, EVENT_QUERY, WAIT, TOUCH };

struct variant {
    std::string name;
    op what;
    int lines; // TOUCH
};

static volatile uint64_t state[32 * 8]; // 32 lines of 64 bytes

static volatile uint32_t *page;
static CUdeviceptr dpage;
static uint32_t value;
static unsigned long sink;

static double run_round(const variant &v, CUfunction k, CUevent *ev, int n)
{
    double a = now_us();
    int slot = 0;
    for (int i = 0; i < n; i++) {
        cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, 0, nullptr, nullptr);
        if (v.what == TOUCH) {
            for (int l = 0; l < v.lines; l++)
                sink += state[l * 8];
            continue;
        }
        if ((i + 1) % 16)
            continue;
        switch (v.what) {
        case NONE: break;
        case WRITE_LOAD: sink += page[(slot + 3) % 4]; // fall through
        case WRITE:
            cuStreamWriteValue32(0, dpage + 4 * slot, ++value, 0);
            slot = (slot + 1) % 4;
            break;
        case EVENT_QUERY: cuEventQuery(ev[(slot + 3) % 4]); // fall through
        case EVENT:
            cuEventRecord(ev[slot], 0);
            slot = (slot + 1) % 4;
            break;
        case WAIT: cuStreamWaitValue32(0, dpage + 64, 7, CU_STREAM_WAIT_VALUE_EQ); break;
        case TOUCH: break;
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
    void *p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || cuMemHostRegister(p, 4096, CU_MEMHOSTREGISTER_DEVICEMAP) ||
        cuMemHostGetDevicePointer(&dpage, p, 0)) {
        fprintf(stderr, "no page mapped for the device\n");
        return 1;
    }
    page = (volatile uint32_t *)p;
    page[16] = 7; // the wait's word: met
    CUevent ev[4];
    for (auto &e : ev)
        cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    std::vector<variant> vs = {
        {"plain", NONE, 0},   {"write16", WRITE, 0},        {"write16_load", WRITE_LOAD, 0},
        {"ev16", EVENT, 0},   {"ev16_query", EVENT_QUERY, 0}, {"wait16", WAIT, 0},
        {"touch1", TOUCH, 1}, {"touch4", TOUCH, 4},         {"touch8", TOUCH, 8},
        {"touch16", TOUCH, 16}, {"touch32", TOUCH, 32},     {"plain_again", NONE, 0},
    };
    for (auto &v : vs) // warm every path
        run_round(v, k, ev, 2000);
    std::vector<std::vector<double>> t(vs.size());
    for (int r = 0; r < rounds; r++)
        for (size_t j = 0; j < vs.size(); j++) {
            size_t i = (j + r) % vs.size(); // rotate the order
            t[i].push_back(run_round(vs[i], k, ev, 5000));
        }
    double plain = median(t[0]);
    printf("{\"rounds\": %d", rounds);
    for (size_t i = 0; i < vs.size(); i++)
        printf(", \"%s_us\": %.4f, \"%s_call_us\": %.3f", vs[i].name.c_str(), median(t[i]),
               vs[i].name.c_str(), (median(t[i]) - plain) * (vs[i].what == TOUCH ? 1 : 16));
    printf(", \"sink\": %lu}\n", sink & 1);
    return 0;
}
