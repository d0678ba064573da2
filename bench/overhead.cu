// Interposer overhead, one process's worth: context start-up, async launch
// cost, 1 MiB cudaMalloc+cudaFree pairs. bench/overhead.py runs it natively
// and under gpuslice alternately, in fresh processes, and compares medians.
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>

__global__ void empty_kernel() {}

static double now_us()
{
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

int main()
{
    double t0 = now_us();
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "no CUDA\n");
        return 1;
    }
    double startup_ms = (now_us() - t0) / 1000.0;
    // warm up
    for (int i = 0; i < 1000; i++)
        empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    const int L = 20000;
    double best_launch = 1e9;
    for (int rep = 0; rep < 5; rep++) {
        double a = now_us();
        for (int i = 0; i < L; i++)
            empty_kernel<<<1, 1>>>();
        double b = now_us();
        cudaDeviceSynchronize();
        double per = (b - a) / L;
        if (per < best_launch)
            best_launch = per;
    }
    const int A = 2000;
    void *p;
    for (int i = 0; i < 100; i++) {
        cudaMalloc(&p, 1 << 20);
        cudaFree(p);
    }
    double a = now_us();
    for (int i = 0; i < A; i++) {
        cudaMalloc(&p, 1 << 20);
        cudaFree(p);
    }
    double alloc_pair = (now_us() - a) / A;
    printf("{\"startup_ms\": %.3f, \"launch_us\": %.4f, \"alloc_pair_us\": %.3f}\n", startup_ms,
           best_launch, alloc_pair);
    return 0;
}
