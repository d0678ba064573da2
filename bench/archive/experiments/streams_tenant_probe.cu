// Session 18: one tenant, two streams. A "long" thread launches kernels of LONG_MS on a
// stream of its own, synchronising after every DEPTH of them; a "short" thread launches an
// empty kernel and synchronises its own stream, ITERS times, 0.5 ms apart. Prints the
// short thread's latency (p50, p99, p99.9, max, how many over 1 ms), the run's length and
// how many long kernels ran. Streams: "ptsz" (each thread's per-thread default stream,
// the program built with --default-stream per-thread) or "explicit" (cudaStreamCreate).
// Under `gpuslice run --compute 100` the interposer bounds its queued work with events:
// with one bound for the whole process the short thread waited behind the long one's.
//
//   nvcc -O2 --default-stream per-thread -o /tmp/streams bench/archive/experiments/streams_tenant_probe.cu
//   gpuslice run --compute 100 --memory 1Gi -- /tmp/streams explicit 2000 5 1
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

int main(int argc, char **argv)
{
    int explicit_streams = argc > 1 && !strcmp(argv[1], "explicit");
    int iters = argc > 2 ? atoi(argv[2]) : 2000;
    double long_ms = argc > 3 ? atof(argv[3]) : 5;
    int depth = argc > 4 ? atoi(argv[4]) : 1;
    cudaFree(0);
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    cudaStream_t sl = cudaStreamPerThread, ss = cudaStreamPerThread;
    if (explicit_streams && (cudaStreamCreate(&sl) != cudaSuccess || cudaStreamCreate(&ss) != cudaSuccess))
        return 1;
    std::atomic<bool> done{false};
    std::atomic<long> long_kernels{0};
    std::thread busy([&] {
        while (!done) {
            for (int i = 0; i < depth; i++)
                spin<<<1, 1, 0, sl>>>((long long)(khz * long_ms)); // at the peak clock
            cudaStreamSynchronize(sl);
            long_kernels += depth;
        }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<double> lat;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++) {
        auto t = std::chrono::steady_clock::now();
        empty<<<1, 1, 0, ss>>>();
        cudaStreamSynchronize(ss);
        lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count());
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    done = true;
    busy.join();
    cudaError_t e = cudaGetLastError();
    std::sort(lat.begin(), lat.end());
    long over = std::count_if(lat.begin(), lat.end(), [](double v) { return v > 1.0; });
    printf("{\"streams\": \"%s\", \"iters\": %d, \"long_ms\": %.1f, \"depth\": %d, \"p50_ms\": %.3f, "
           "\"p99_ms\": %.3f, \"p999_ms\": %.3f, \"max_ms\": %.3f, \"over_1ms\": %ld, \"secs\": %.2f, "
           "\"long_kernels\": %ld, \"error\": \"%s\"}\n",
           explicit_streams ? "explicit" : "ptsz", iters, long_ms, depth, lat[lat.size() / 2],
           lat[lat.size() * 99 / 100], lat[lat.size() * 999 / 1000], lat.back(), over, secs,
           long_kernels.load(), cudaGetErrorString(e));
    return 0;
}
