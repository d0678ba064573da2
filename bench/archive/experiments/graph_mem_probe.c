/* Does memory that a CUDA graph allocates (a stream-ordered allocation
 * captured into a graph: a memory-allocation node) reach the slice? Run under
 * `gpuslice run --memory 1Gi`. It captures MiB bytes of cuMemAllocAsync, a
 * memset of them and (with "free") their cuMemFreeAsync, instantiates and
 * launches the graph, and prints the GPU's free memory as the slice shows it
 * and the device's graph memory attributes.
 *   gcc -O2 -I/usr/local/cuda/include -o /tmp/graphmem graph_mem_probe.c \
 *       -L/usr/local/nvidia/lib64 -lcuda
 *   graphmem MiB [free]
 * It also times the two driver calls the interposer adds to a
 * synchronisation once graphs have been launched. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x)                                     \
    do {                                          \
        CUresult r_ = (x);                        \
        if (r_) {                                 \
            printf("FAIL %s: %d\n", #x, (int)r_); \
            return 1;                             \
        }                                         \
    } while (0)

static void show(const char *when, CUdevice dev)
{
    size_t f = 0, t = 0;
    cuuint64_t res = 0, used = 0;
    cuMemGetInfo(&f, &t);
    cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &res);
    cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used);
    printf("%s: free %zu MiB of %zu; graph memory reserved %llu MiB, used %llu MiB\n", when,
           f >> 20, t >> 20, (unsigned long long)(res >> 20), (unsigned long long)(used >> 20));
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 2048;
    int with_free = argc > 2 && !strcmp(argv[2], "free");
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    show("start", dev);
    CUdeviceptr p = 0;
    CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUresult a = cuMemAllocAsync(&p, mib << 20, s);
    printf("captured cuMemAllocAsync(%zu MiB): rc %d\n", mib, (int)a);
    if (a == CUDA_SUCCESS) {
        CK(cuMemsetD8Async(p, 1, mib << 20, s));
        if (with_free)
            CK(cuMemFreeAsync(p, s));
    }
    CUgraph g;
    CK(cuStreamEndCapture(s, &g));
    CUgraphExec e;
    CUresult ir = cuGraphInstantiate(&e, g, 0);
    printf("instantiate rc %d\n", (int)ir);
    if (ir)
        return 1;
    show("instantiated", dev);
    CUresult lr = cuGraphLaunch(e, s);
    CUresult sr = cuStreamSynchronize(s);
    printf("launch rc %d, sync rc %d\n", (int)lr, (int)sr);
    show("launched", dev);
    CUdeviceptr q = 0;
    CUresult r2 = cuMemAlloc(&q, 512ull << 20);
    printf("then cuMemAlloc(512 MiB): rc %d\n", (int)r2);
    if (!with_free && a == CUDA_SUCCESS) {
        CK(cuMemFreeAsync(p, s));
        CK(cuStreamSynchronize(s));
    }
    /* What the interposer's read costs, per synchronisation after graph launches. */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 100000; i++) {
        CUdevice d;
        cuuint64_t v;
        cuCtxGetDevice(&d);
        cuDeviceGetGraphMemAttribute(d, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("cuCtxGetDevice + cuDeviceGetGraphMemAttribute: %.3f us per pair\n",
           ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e3 / 100000);
    CK(cuGraphExecDestroy(e));
    CK(cuGraphDestroy(g));
    CK(cuDeviceGraphMemTrim(dev));
    show("destroyed and trimmed", dev);
    return 0;
}
