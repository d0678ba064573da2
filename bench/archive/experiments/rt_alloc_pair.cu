// One-off (session 11): a 1 MiB cudaMalloc + cudaFree pair through the CUDA
// runtime, as issue 20's outside harness measured it (74.6 against 64.6 us).
// Prints the median of 15 rounds of 200 pairs, in microseconds per pair.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>
#include <cuda_runtime.h>
int main()
{
    void *p;
    cudaFree(0);
    for (int i = 0; i < 200; i++) {
        cudaMalloc(&p, 1 << 20);
        cudaFree(p);
    }
    std::vector<double> r;
    for (int k = 0; k < 15; k++) {
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 200; i++) {
            if (cudaMalloc(&p, 1 << 20) != cudaSuccess) {
                printf("cudaMalloc failed\n");
                return 1;
            }
            cudaFree(p);
        }
        r.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 200);
    }
    std::sort(r.begin(), r.end());
    printf("%.2f\n", r[r.size() / 2]);
    return 0;
}
