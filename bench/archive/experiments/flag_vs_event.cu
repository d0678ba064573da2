// Session 30 (issue 20): can a word the GPU writes into pinned host memory
// (cuStreamWriteValue32 after a launch) stand in for an event the host
// queries (cuEventRecord + cuEventQuery)? Next to an idle critical tenant a
// best-effort tenant marks the end of about 50 us of its GPU work and, before
// going on, asks whether the mark before it has been passed; on the H200 an
// event's query cost 1.45-1.63 us (session 29). No gpuslice here: libcuda alone.
//
// 1. Host cost per launch, empty kernels on a non-blocking stream, 5,000 a
//    round, variants taking turns round by round (median over the rounds):
//      plain        launches only
//      ev7          an event after every 7th launch, the one before queried
//      ev7_norec    ... recorded, never queried
//      wv7          a 32-bit write into pinned host memory after every 7th,
//                   the one before read with a plain load
//      wv7_nochk    ... written, never read
// 2. The calls alone, over 20,000 each (ns): a record, a query of a finished
//    event, a query of an unfinished one, a write-value, a load of the word.
// 3. The GPU side: a loop of 5 us kernels (globaltimer spin), 2,000 a round,
//    with a mark after every launch (ev1 or wv1) or none: time per launch.
// 4. When each is seen: a 200 us kernel, then an event and a write-value;
//    the host polls both, and reports when each was first seen done,
//    relative to the kernel's launch (median over 50 trials, us).
//
//   nvcc -O2 -o /tmp/gs-flag bench/archive/experiments/flag_vs_event.cu -lcuda
//   taskset -c 2 /tmp/gs-flag [rounds]      # one JSON line
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <cuda.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

__global__ void empty_kernel() {}

__global__ void spin_kernel(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

static double now_ns()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v.empty() ? -1 : v[v.size() / 2];
}

#define CK(x)                                                                                      \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *s_ = "?";                                                                  \
            cuGetErrorString(r_, &s_);                                                             \
            fprintf(stderr, "%s: %d %s\n", #x, (int)r_, s_);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static CUstream st;
static CUfunction kempty, kspin;
static CUevent ev[4];
static volatile unsigned *flag; // host view
static CUdeviceptr dflag;       // device view
static unsigned seq;

enum mark { NONE, EV, EV_NOQ, WV, WV_NOCHK };

static void launch_empty()
{
    cuLaunchKernel(kempty, 1, 1, 1, 1, 1, 1, 0, st, nullptr, nullptr);
}

static void launch_spin(unsigned long long ns)
{
    void *args[] = {&ns};
    cuLaunchKernel(kspin, 1, 1, 1, 32, 1, 1, 0, st, args, nullptr);
}

static volatile unsigned sink;

// One mark after a launch; slot cycles over 4.
static void mark(enum mark m, int &slot)
{
    switch (m) {
    case NONE:
        return;
    case EV:
        cuEventQuery(ev[(slot + 3) % 4]);
        /* fall through */
    case EV_NOQ:
        cuEventRecord(ev[slot], st);
        break;
    case WV:
        sink = flag[(slot + 3) % 4];
        /* fall through */
    case WV_NOCHK:
        cuStreamWriteValue32(st, dflag + 4 * slot, ++seq, 0);
        break;
    }
    slot = (slot + 1) % 4;
}

static double host_round(enum mark m, int every, int n)
{
    int slot = 0;
    double a = now_ns();
    for (int i = 0; i < n; i++) {
        launch_empty();
        if ((i + 1) % every == 0)
            mark(m, slot);
    }
    double b = now_ns();
    cuStreamSynchronize(st);
    return (b - a) / n / 1e3;
}

static double gpu_round(enum mark m, int n)
{
    int slot = 0;
    cuStreamSynchronize(st);
    double a = now_ns();
    for (int i = 0; i < n; i++) {
        launch_spin(5000);
        mark(m, slot);
    }
    cuStreamSynchronize(st);
    return (now_ns() - a) / n / 1e3;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 21;
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "no CUDA\n");
        return 1;
    }
    CUdevice dev;
    CK(cuCtxGetDevice(&dev));
    int a92 = -1, a93 = -1;
    cuDeviceGetAttribute(&a92, (CUdevice_attribute)92, dev);
    cuDeviceGetAttribute(&a93, (CUdevice_attribute)93, dev);
    int drv = 0;
    cuDriverGetVersion(&drv);
    CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
    if (cudaGetFuncBySymbol((cudaFunction_t *)&kempty, (const void *)empty_kernel) != cudaSuccess ||
        cudaGetFuncBySymbol((cudaFunction_t *)&kspin, (const void *)spin_kernel) != cudaSuccess) {
        fprintf(stderr, "cudaGetFuncBySymbol failed\n");
        return 1;
    }
    for (auto &e : ev)
        CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    void *hp = nullptr;
    CK(cuMemHostAlloc(&hp, 4096, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP));
    CK(cuMemHostGetDevicePointer(&dflag, hp, 0));
    flag = (volatile unsigned *)hp;
    printf("{\"driver\": %d, \"attr92\": %d, \"attr93\": %d, \"same_address\": %d", drv, a92, a93,
           (void *)dflag == hp);
    // does the write land? (a check before any timing)
    CK(cuStreamWriteValue32(st, dflag, 12345, 0));
    CK(cuStreamSynchronize(st));
    printf(", \"write_lands\": %d", flag[0] == 12345);
    fflush(stdout);

    // 1. host cost per launch
    struct v {
        const char *name;
        enum mark m;
    } vs[] = {{"plain", NONE}, {"ev7", EV}, {"ev7_norec", EV_NOQ}, {"wv7", WV},
              {"wv7_nochk", WV_NOCHK}};
    const int nv = sizeof vs / sizeof vs[0];
    for (auto &x : vs)
        host_round(x.m, 7, 2000);
    std::vector<std::vector<double>> t(nv);
    for (int r = 0; r < rounds; r++)
        for (int j = 0; j < nv; j++) {
            int i = (j + r) % nv;
            t[i].push_back(host_round(vs[i].m, 7, 5000));
        }
    for (int i = 0; i < nv; i++)
        printf(", \"%s_us\": %.4f", vs[i].name, median(t[i]));

    // 2. the calls alone
    const int m = 20000;
    std::vector<double> rec, qdone, qbusy, wv, ld;
    for (int i = 0; i < m; i++) {
        double a = now_ns();
        cuEventRecord(ev[0], st);
        double b = now_ns();
        rec.push_back(b - a);
    }
    cuStreamSynchronize(st);
    for (int i = 0; i < m; i++) {
        double a = now_ns();
        cuEventQuery(ev[0]);
        qdone.push_back(now_ns() - a);
    }
    launch_spin(200ull * 1000 * 1000); // 200 ms busy
    cuEventRecord(ev[1], st);
    for (int i = 0; i < m; i++) {
        double a = now_ns();
        CUresult q = cuEventQuery(ev[1]);
        qbusy.push_back(now_ns() - a);
        if (q != CUDA_ERROR_NOT_READY)
            break;
    }
    cuStreamSynchronize(st);
    for (int i = 0; i < m; i++) {
        double a = now_ns();
        cuStreamWriteValue32(st, dflag + 8, i, 0);
        wv.push_back(now_ns() - a);
    }
    cuStreamSynchronize(st);
    for (int i = 0; i < m; i++) {
        double a = now_ns();
        sink = flag[2];
        ld.push_back(now_ns() - a);
    }
    printf(", \"record_ns\": %.0f, \"query_done_ns\": %.0f, \"query_busy_ns\": %.0f, "
           "\"busy_queries\": %zu, \"writevalue_ns\": %.0f, \"load_ns\": %.0f",
           median(rec), median(qdone), median(qbusy), qbusy.size(), median(wv), median(ld));

    // 3. the GPU side
    struct v gs[] = {{"gpu_none", NONE}, {"gpu_ev1", EV_NOQ}, {"gpu_wv1", WV_NOCHK}};
    std::vector<std::vector<double>> g(3);
    for (int r = 0; r < 5; r++)
        for (int j = 0; j < 3; j++) {
            int i = (j + r) % 3;
            g[i].push_back(gpu_round(gs[i].m, 2000));
        }
    for (int i = 0; i < 3; i++)
        printf(", \"%s_us\": %.3f", gs[i].name, median(g[i]));

    // 4. when each is seen
    std::vector<double> sev, swv;
    for (int k = 0; k < 50; k++) {
        cuStreamSynchronize(st);
        unsigned want = ++seq;
        double a = now_ns();
        launch_spin(200ull * 1000);
        cuEventRecord(ev[2], st);
        cuStreamWriteValue32(st, dflag + 12, want, 0);
        double te = 0, tw = 0;
        while (!te || !tw) {
            double n = now_ns();
            if (!tw && flag[3] == want)
                tw = n;
            if (!te && cuEventQuery(ev[2]) == CUDA_SUCCESS)
                te = now_ns();
        }
        sev.push_back((te - a) / 1e3);
        swv.push_back((tw - a) / 1e3);
    }
    printf(", \"seen_event_us\": %.2f, \"seen_write_us\": %.2f}\n", median(sev), median(swv));
    return 0;
}
