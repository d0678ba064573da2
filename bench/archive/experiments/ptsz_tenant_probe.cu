// Session 16: the interposer's events after _ptsz launches, end to end. A tenant built
// with --default-stream per-thread runs two threads: one launches 5 ms kernels back to
// back on its per-thread default stream, the other an empty kernel and a sync of its own
// stream, 300 times. Prints the second thread's latency (p50, p99, max). Run it under
// `gpuslice run --compute 100` with a build whose events after a _ptsz launch go on the
// legacy stream (the second thread then waits behind the first one's kernels whenever an
// event lands between them) and with one whose events go on the thread's own stream.
//
//   nvcc -O2 --default-stream per-thread -o /tmp/ptsz-tenant bench/archive/experiments/ptsz_tenant_probe.cu
//   gpuslice run --compute 100 --memory 1Gi -- /tmp/ptsz-tenant
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <thread>
#include <vector>

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}
__global__ void empty() {}

int main()
{
    cudaFree(0);
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    std::atomic<bool> done{false};
    std::thread busy([&] {
        while (!done) {
            spin<<<1, 1>>>((long long)khz * 5); // about 5 ms at the peak clock
            cudaStreamSynchronize(cudaStreamPerThread);
        }
    });
    std::vector<double> lat;
    for (int i = 0; i < 300; i++) {
        auto t = std::chrono::steady_clock::now();
        empty<<<1, 1>>>();
        cudaStreamSynchronize(cudaStreamPerThread);
        lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    done = true;
    busy.join();
    std::sort(lat.begin(), lat.end());
    printf("{\"empty_kernel_ms_p50\": %.3f, \"p99\": %.3f, \"max\": %.3f}\n", lat[lat.size() / 2],
           lat[lat.size() * 99 / 100], lat.back());
    return 0;
}
