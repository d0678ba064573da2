// Session 19 (issue 20): what does a best-effort launch beside an idle critical
// tenant pay for, the calls on its events or the one-kernel queue that makes it
// wait for the GPU? No gpuslice here: libcuda alone, one process, a loop of
// kernels of a given length on one stream, with the queue policy of each variant:
//   plain   launch only (what the tenant does without gpuslice)
//   ev      an event (timing disabled) recorded after every launch, never queried
//   evq     the same, and the oldest outstanding queried (dropped if finished),
//           never waited for: the calls of the bounded queue without its waits
//   d1      before each launch, wait until at most one event is outstanding
//           (query, sched_yield between): one kernel queued behind the running
//           one, what the interposer does beside an idle critical tenant
//   d0      wait until none is outstanding: beside a busy critical tenant
//   wv      cuStreamWriteValue64 of a sequence number to mapped host memory after
//           every launch, never read
//   wv1     the same, and d1's wait done by reading that memory
//   tNN     events paced by the kernels' length (known here): one per launches
//           covering NN us of GPU work (at least one kernel), at most one
//           outstanding before a recording launch; the queue then holds about
//           2 x NN us of work
// Each round times n launches (a sync after, not timed; with CQ_WALL=1 timed
// too: the launches' throughput); variants take turns; the median per launch
// per variant (CQ_ONLY=name: that variant alone). Then the host cost of the
// calls alone.
//
//   nvcc -O2 -o /tmp/gs-cq bench/archive/experiments/crit_queue_probe.cu -lcuda
//   taskset -c 2 /tmp/gs-cq [rounds] [kernel lengths in ns, comma-separated]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <cuda.h>
#include <cuda_runtime.h>
#include <sched.h>
#include <string>
#include <vector>

__global__ void spin(unsigned long long ns)
{
    if (!ns)
        return;
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

static double now_us()
{
    timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

enum { POOL = 64 };
static CUevent ev[POOL];
static volatile unsigned long long *flag; // host view of the written sequence
static CUdeviceptr flag_dev;
static bool wall; // CQ_WALL=1: the sync after the launches counts

struct variant {
    std::string name;
    int kind;     // 0 plain, 1 events, 2 write value
    int query;    // events: query the oldest after recording (no wait)
    int max_out;  // wait before a recording launch until at most this many are outstanding (-1: never)
    int cover_us; // events: one per launches covering this much work (0: every launch)
};

static double run_round(const variant &v, CUfunction k, CUstream s, unsigned long long len, int n)
{
    void *args[] = {&len};
    unsigned every = 1;
    if (v.cover_us) {
        unsigned long long per = len ? len : 1000; // an empty kernel: about 1 us of the front end
        every = (unsigned)std::max(1ull, v.cover_us * 1000ull / per);
    }
    unsigned long long seq = 0, head = 0; // events/values recorded, the oldest outstanding
    *flag = 0;
    double a = now_us();
    for (int i = 0; i < n; i++) {
        bool rec = v.kind && (i + 1) % every == 0;
        if (rec && v.max_out >= 0) {
            if (v.kind == 1) {
                while (seq - head > (unsigned long long)v.max_out) {
                    if (cuEventQuery(ev[head % POOL]) == CUDA_SUCCESS)
                        head++;
                    else
                        sched_yield();
                }
            } else {
                while (seq - *flag > (unsigned long long)v.max_out)
                    sched_yield();
            }
        }
        cuLaunchKernel(k, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr);
        if (!rec)
            continue;
        if (v.kind == 1) {
            if (seq - head >= POOL) // never here with a bound; without one, forget the oldest
                head++;
            cuEventRecord(ev[seq % POOL], s);
            seq++;
            if (v.query && seq - head > 1 && cuEventQuery(ev[head % POOL]) == CUDA_SUCCESS)
                head++;
        } else {
            cuStreamWriteValue64(s, flag_dev, ++seq, CU_STREAM_WRITE_VALUE_DEFAULT);
        }
    }
    double b = now_us();
    cuStreamSynchronize(s);
    if (wall)
        b = now_us();
    return (b - a) / n;
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 15;
    std::vector<unsigned long long> lens = {0, 5000, 20000, 100000};
    if (argc > 2) {
        lens.clear();
        for (char *p = strtok(argv[2], ","); p; p = strtok(nullptr, ","))
            lens.push_back(strtoull(p, nullptr, 10));
    }
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "no CUDA\n");
        return 1;
    }
    CUfunction k;
    if (cudaGetFuncBySymbol((cudaFunction_t *)&k, (const void *)spin) != cudaSuccess) {
        fprintf(stderr, "cudaGetFuncBySymbol failed\n");
        return 1;
    }
    for (auto &e : ev)
        cuEventCreate(&e, CU_EVENT_DISABLE_TIMING);
    void *host;
    if (cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE) !=
            CUDA_SUCCESS ||
        cuMemHostGetDevicePointer(&flag_dev, host, 0) != CUDA_SUCCESS) {
        fprintf(stderr, "no mapped host memory\n");
        return 1;
    }
    flag = (volatile unsigned long long *)host;
    int memops = 0;
    CUdevice dev;
    cuCtxGetDevice(&dev);
    cuDeviceGetAttribute(&memops, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1, dev);
    CUstream s;
    cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
    std::vector<variant> vs = {
        {"plain", 0, 0, -1, 0}, {"ev", 1, 0, -1, 0},  {"evq", 1, 1, -1, 0},
        {"d1", 1, 0, 1, 0},     {"d0", 1, 0, 0, 0},   {"wv", 2, 0, -1, 0},
        {"wv1", 2, 0, 1, 0},    {"t25", 1, 0, 1, 25}, {"t50", 1, 0, 1, 50},
        {"t100", 1, 0, 1, 100},
    };
    wall = getenv("CQ_WALL") && !strcmp(getenv("CQ_WALL"), "1");
    if (const char *only = getenv("CQ_ONLY")) {
        std::vector<variant> keep;
        for (auto &v : vs)
            if (v.name == only)
                keep.push_back(v);
        if (keep.empty()) {
            fprintf(stderr, "no variant %s\n", only);
            return 2;
        }
        vs = keep;
    }
    printf("{\"rounds\": %d, \"wall\": %d, \"stream_mem_ops\": %d", rounds, wall, memops);
    for (unsigned long long len : lens) {
        int n = (int)std::max(500.0, 30000.0 / (len / 1000.0 + 3.0)); // ~30 ms a round
        for (auto &v : vs)
            run_round(v, k, s, len, n / 4);
        std::vector<std::vector<double>> t(vs.size());
        for (int r = 0; r < rounds; r++)
            for (size_t j = 0; j < vs.size(); j++) {
                size_t i = (j + r) % vs.size();
                t[i].push_back(run_round(vs[i], k, s, len, n));
            }
        for (size_t i = 0; i < vs.size(); i++)
            printf(", \"k%llu_%s_us\": %.4f", len / 1000, vs[i].name.c_str(), median(t[i]));
        fflush(stdout);
    }
    // The calls alone, on an idle stream.
    const int m = 100000;
    cuEventRecord(ev[0], s);
    cuStreamSynchronize(s);
    double a = now_us();
    for (int i = 0; i < m; i++)
        cuEventQuery(ev[0]);
    double q_ns = (now_us() - a) * 1e3 / m;
    a = now_us();
    for (int i = 0; i < m; i++)
        cuEventRecord(ev[i % POOL], s);
    double r_ns = (now_us() - a) * 1e3 / m;
    cuStreamSynchronize(s);
    a = now_us();
    for (int i = 0; i < m; i++)
        cuStreamWriteValue64(s, flag_dev, i, CU_STREAM_WRITE_VALUE_DEFAULT);
    double w_ns = (now_us() - a) * 1e3 / m;
    cuStreamSynchronize(s);
    printf(", \"query_done_ns\": %.1f, \"record_ns\": %.1f, \"write_value_ns\": %.1f}\n", q_ns, r_ns,
           w_ns);
    return 0;
}
