// A tenant that resets its device and goes on (cudaDeviceReset between two
// phases, as test suites and some applications do), to run under
// `gpuslice run`: each phase allocates most of the slice, launches kernels
// (a share's event ring, or a critical tenant's prime, records and queries
// its own events there) and frees nothing before the reset.
//   nvcc -O2 -o /tmp/ctx-reset ctx_reset_tenant.cu
//   gpuslice run --memory 4Gi --compute 50 -- /tmp/ctx-reset 3072 requests
// argv[1]: MiB per phase; argv[2]: "stream" (kernels back to back, a sync at
// the end) or "requests" (a kernel and a sync every 2 ms, 100 times).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

__global__ void spin(float *p, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = p[i] * 0.5f + 1.0f;
}

static int phase(int k, size_t mib, bool requests)
{
    float *p = nullptr;
    cudaError_t e = cudaMalloc(&p, mib << 20);
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    printf("phase %d: cudaMalloc %zu MiB: %s; the slice then shows %zu MiB free of %zu\n", k, mib,
           cudaGetErrorString(e), f >> 20, t >> 20);
    if (e != cudaSuccess)
        return 1;
    int n = 1 << 24;
    for (int i = 0; i < 100; i++) {
        spin<<<n / 256, 256>>>(p, n);
        if (requests) {
            cudaDeviceSynchronize();
            usleep(2000);
        }
    }
    e = cudaDeviceSynchronize();
    printf("phase %d: 100 kernels: %s\n", k, cudaGetErrorString(e));
    return e != cudaSuccess;
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], nullptr, 10) : 3072;
    bool requests = argc > 2 && !strcmp(argv[2], "requests");
    if (phase(1, mib, requests))
        return 1;
    cudaError_t e = cudaDeviceReset();
    printf("cudaDeviceReset: %s\n", cudaGetErrorString(e));
    if (phase(2, mib, requests))
        return 2;
    printf("done\n");
    return 0;
}
