// Do green contexts work here, and inside an NVIDIA MPS client? (issue 6 asks to measure it)
//
//   nvcc -O2 -o green_ctx_probe bench/green_ctx_probe.cu -lcuda
//   ./green_ctx_probe [SMs]          (run once plainly and once with an MPS daemon up)
//
// Each check launches a kernel whose blocks record the SM they ran on and spin for a
// while, and reports how many distinct SMs it used and how long it took:
//   full:          runtime launch on an ordinary stream (the whole GPU)
//   green_rt:      runtime launch (<<<>>>) on a green context's stream, primary context current
//   green_drv:     cuLaunchKernel of the runtime's CUfunction on the green stream
//   green_ctx_cur: runtime launch with the green context made current (cuCtxFromGreenCtx)
// What an interposer could do with it: move a best-effort tenant's launches onto a
// stream of a green context with fewer SMs while a critical tenant has work. That needs
// green_rt or green_drv to run, on the green context's SMs only.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

__global__ void where(unsigned *sm_of_block, long long spin)
{
    unsigned id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    long long t0 = clock64();
    while (clock64() - t0 < spin)
        ;
    if (threadIdx.x == 0)
        sm_of_block[blockIdx.x] = id;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define BLOCKS 1056 /* 8 per SM on a 132-SM H200 */

static unsigned *d_sm;
static unsigned h_sm[BLOCKS];

static void report(const char *name, CUresult rc_launch, cudaError_t err, double ms, int first)
{
    int seen[1024] = {0}, distinct = 0;
    if (rc_launch == CUDA_SUCCESS && err == cudaSuccess &&
        cudaMemcpy(h_sm, d_sm, sizeof h_sm, cudaMemcpyDeviceToHost) == cudaSuccess) {
        for (int i = 0; i < BLOCKS; i++)
            if (h_sm[i] < 1024 && !seen[h_sm[i]]++)
                distinct++;
    }
    const char *es = NULL;
    if (rc_launch != CUDA_SUCCESS)
        cuGetErrorName(rc_launch, &es);
    printf("%s\"%s\": {\"launch\": \"%s\", \"runtime\": \"%s\", \"distinct_sms\": %d, \"ms\": %.3f}\n",
           ",", name, es ? es : "CUDA_SUCCESS", cudaGetErrorName(err), distinct, ms);
    cudaGetLastError();
}

int main(int argc, char **argv)
{
    unsigned want = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    CUdevice dev;
    cuInit(0);
    cuDeviceGet(&dev, 0);
    cudaSetDevice(0);
    cudaFree(0); /* the runtime's primary context */
    cudaMalloc(&d_sm, sizeof h_sm);
    const char *mps = getenv("CUDA_MPS_PIPE_DIRECTORY");
    printf("{\"mps_pipe\": \"%s\"\n", mps ? mps : "");
    long long spin = 200000; /* clocks per block: ~0.1 ms at 2 GHz */

    double t = now_ms();
    cudaMemset(d_sm, 0xff, sizeof h_sm);
    where<<<BLOCKS, 64>>>(d_sm, spin);
    cudaError_t e = cudaDeviceSynchronize();
    report("full", CUDA_SUCCESS, e, now_ms() - t, 1);

    CUdevResource all, parts[64], rest;
    unsigned nparts = 64;
    CUresult rc = cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM);
    if (rc != CUDA_SUCCESS) {
        const char *es;
        cuGetErrorName(rc, &es);
        printf(",\"green\": \"cuDeviceGetDevResource: %s\"}\n", es);
        return 0;
    }
    if (!want)
        want = all.sm.smCount / 2;
    rc = cuDevSmResourceSplitByCount(parts, &nparts, &all, &rest, 0, want);
    printf(",\"sm_total\": %u, \"split_rc\": %d, \"groups\": %u, \"group_sms\": %u\n", all.sm.smCount, rc,
           nparts, nparts ? parts[0].sm.smCount : 0);
    if (rc != CUDA_SUCCESS || !nparts) {
        printf("}\n");
        return 0;
    }
    CUdevResourceDesc desc;
    CUgreenCtx g;
    CUstream gs;
    rc = cuDevResourceGenerateDesc(&desc, &parts[0], 1);
    if (rc == CUDA_SUCCESS)
        rc = cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
    if (rc == CUDA_SUCCESS)
        rc = cuGreenCtxStreamCreate(&gs, g, CU_STREAM_NON_BLOCKING, 0);
    {
        const char *es;
        cuGetErrorName(rc, &es);
        printf(",\"green_create\": \"%s\"\n", es);
    }
    if (rc != CUDA_SUCCESS) {
        printf("}\n");
        return 0;
    }

    t = now_ms();
    cudaMemset(d_sm, 0xff, sizeof h_sm);
    cudaDeviceSynchronize();
    t = now_ms();
    where<<<BLOCKS, 64, 0, (cudaStream_t)gs>>>(d_sm, spin);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaStreamSynchronize((cudaStream_t)gs);
    report("green_rt", CUDA_SUCCESS, e, now_ms() - t, 0);

    cudaFunction_t fn;
    e = cudaGetFuncBySymbol(&fn, (const void *)where);
    cudaMemset(d_sm, 0xff, sizeof h_sm);
    cudaDeviceSynchronize();
    void *params[] = {&d_sm, &spin};
    t = now_ms();
    CUresult lr = e == cudaSuccess ? cuLaunchKernel((CUfunction)fn, BLOCKS, 1, 1, 64, 1, 1, 0, gs, params, NULL)
                                   : CUDA_ERROR_NOT_FOUND;
    e = lr == CUDA_SUCCESS ? cudaStreamSynchronize((cudaStream_t)gs) : cudaSuccess;
    report("green_drv", lr, e, now_ms() - t, 0);

    CUcontext gc, prev;
    cuCtxGetCurrent(&prev);
    lr = cuCtxFromGreenCtx(&gc, g);
    if (lr == CUDA_SUCCESS)
        lr = cuCtxSetCurrent(gc);
    cudaMemset(d_sm, 0xff, sizeof h_sm);
    cudaDeviceSynchronize();
    t = now_ms();
    if (lr == CUDA_SUCCESS) {
        where<<<BLOCKS, 64, 0, (cudaStream_t)gs>>>(d_sm, spin);
        e = cudaGetLastError();
        if (e == cudaSuccess)
            e = cudaStreamSynchronize((cudaStream_t)gs);
    }
    report("green_ctx_cur", lr, e, now_ms() - t, 0);
    cuCtxSetCurrent(prev);

    /* And back on the whole GPU, to compare the time with the first run. */
    cudaMemset(d_sm, 0xff, sizeof h_sm);
    cudaDeviceSynchronize();
    t = now_ms();
    where<<<BLOCKS, 64>>>(d_sm, spin);
    e = cudaDeviceSynchronize();
    report("full_again", CUDA_SUCCESS, e, now_ms() - t, 0);
    printf("}\n");
    return 0;
}
