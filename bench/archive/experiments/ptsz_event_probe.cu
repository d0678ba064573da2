// Session 16: where an event after a per-thread-default-stream launch should go.
// Thread 1 runs a 100 ms kernel on its per-thread default stream and records an event
// after it, on the legacy stream (what the interposer did after a _ptsz launch on the
// NULL stream) or on CU_STREAM_PER_THREAD (what it does now). Thread 2 then launches an
// empty kernel on its own per-thread default stream and times it to completion. On the
// legacy stream the event waits for every blocking stream and holds their later work:
// thread 2 waits for thread 1's kernel. (Built with --default-stream per-thread, cuda.h
// maps cuEventRecord to cuEventRecord_ptsz, where the interposer calls the plain one;
// with the stream named explicitly, as here, the two mean the same stream.)
//
//   nvcc -O2 --default-stream per-thread -o /tmp/ptsz bench/archive/experiments/ptsz_event_probe.cu -lcuda
//   /tmp/ptsz
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cuda.h>
#include <cuda_runtime.h>
#include <thread>

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}
__global__ void empty() {}

static double ms_since(std::chrono::steady_clock::time_point t)
{
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int main()
{
    cudaFree(0);
    int khz = 0;
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
    CUcontext ctx;
    cuCtxGetCurrent(&ctx);
    for (int mode = 0; mode < 2; mode++) {
        CUstream where = mode ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
        std::atomic<int> recorded{0};
        CUresult rc = CUDA_SUCCESS;
        double t2 = 0;
        std::thread a([&] {
            cuCtxSetCurrent(ctx);
            CUevent ev;
            cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
            spin<<<1, 1>>>((long long)khz * 100); // about 100 ms at the peak clock
            rc = cuEventRecord(ev, where);
            recorded = 1;
            cuEventSynchronize(ev);
            cuEventDestroy(ev);
        });
        std::thread b([&] {
            cuCtxSetCurrent(ctx);
            while (!recorded)
                std::this_thread::yield();
            auto t = std::chrono::steady_clock::now();
            empty<<<1, 1>>>();
            cudaStreamSynchronize(cudaStreamPerThread);
            t2 = ms_since(t);
        });
        a.join();
        b.join();
        cudaDeviceSynchronize();
        printf("{\"event_on\": \"%s\", \"record_rc\": %d, \"other_thread_kernel_ms\": %.3f}\n",
               mode ? "CU_STREAM_PER_THREAD" : "CU_STREAM_LEGACY", (int)rc, t2);
    }
    return 0;
}
