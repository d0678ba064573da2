// Interposer overhead inside one process: the driver's own entry points against the
// ones an application gets under gpuslice, interleaved, so process-to-process noise
// (CPU core, clocks, address layout) cancels out.
//
//   nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl
//   LD_PRELOAD=.../libgpuslice.so GPUSLICE_STATE_DIR=... /tmp/gs-inproc
//
// "hooked" is what dlsym(libcuda.so.1, name) returns (the interposer's wrapper when
// it is loaded); "real" is the same name looked up in libcuda's own dynamic symbol
// table (GNU hash), which no interposer can redirect. Prints one JSON line.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <vector>

__global__ void empty_kernel() {}

static double now_us()
{
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct lookup {
    const char *name;
    void *addr;
};

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static int find_in_object(struct dl_phdr_info *info, size_t, void *data)
{
    lookup *want = (lookup *)data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libcuda.so"))
        return 0;
    const ElfW(Dyn) *dyn = nullptr;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    uintptr_t base = info->dlpi_addr, symtab = 0, strtab = 0, gnuhash = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr;
        if (v < base) // glibc relocates these in place on most targets; not on all
            v += base;
        if (dyn->d_tag == DT_SYMTAB)
            symtab = v;
        else if (dyn->d_tag == DT_STRTAB)
            strtab = v;
        else if (dyn->d_tag == DT_GNU_HASH)
            gnuhash = v;
    }
    if (!symtab || !strtab || !gnuhash)
        return 0;
    const uint32_t *h = (const uint32_t *)gnuhash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
    const uint32_t *buckets = h + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t hash = gnu_hash(want->name);
    uint32_t i = buckets[hash % nbuckets];
    if (i < symoffset)
        return 0;
    const ElfW(Sym) *syms = (const ElfW(Sym) *)symtab;
    for (;; i++) {
        uint32_t h2 = chain[i - symoffset];
        if ((hash | 1) == (h2 | 1) && !strcmp((const char *)strtab + syms[i].st_name, want->name) &&
            syms[i].st_value) {
            want->addr = (void *)(base + syms[i].st_value);
            return 1;
        }
        if (h2 & 1)
            break;
    }
    return 0;
}

static void *real_symbol(const char *name)
{
    lookup l = {name, nullptr};
    dl_iterate_phdr(find_in_object, &l);
    return l.addr;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static double time_launches(launch_fn f, CUfunction k, int n)
{
    double a = now_us();
    for (int i = 0; i < n; i++)
        f(k, 1, 1, 1, 1, 1, 1, 0, 0, nullptr, nullptr);
    double b = now_us();
    cudaDeviceSynchronize();
    return (b - a) / n;
}

static double time_allocs(alloc_fn al, free_fn fr, int n)
{
    CUdeviceptr p;
    double a = now_us();
    for (int i = 0; i < n; i++) {
        if (al(&p, 1 << 20) != CUDA_SUCCESS)
            return -1;
        fr(p);
    }
    return (now_us() - a) / n;
}

static double quantile(std::vector<double> v, double q)
{
    std::sort(v.begin(), v.end());
    return v[(size_t)(q * (v.size() - 1) + 0.5)];
}

static double median(const std::vector<double> &v)
{
    return quantile(v, 0.5);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 41;
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "no CUDA\n");
        return 1;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
        fprintf(stderr, "libcuda.so.1 is not loaded\n");
        return 1;
    }
    const char *names[3] = {"cuLaunchKernel", "cuMemAlloc_v2", "cuMemFree_v2"};
    void *hooked[3], *real[3];
    for (int i = 0; i < 3; i++) {
        hooked[i] = dlsym(h, names[i]);
        real[i] = real_symbol(names[i]);
        if (!hooked[i] || !real[i]) {
            fprintf(stderr, "cannot resolve %s (dlsym %p, libcuda table %p)\n", names[i], hooked[i],
                    real[i]);
            return 1;
        }
    }
    CUfunction k;
    if (cudaGetFuncBySymbol((cudaFunction_t *)&k, (const void *)empty_kernel) != cudaSuccess) {
        fprintf(stderr, "cudaGetFuncBySymbol failed\n");
        return 1;
    }
    // Warm both paths (first calls fault in pages, the interposer's first launch
    // reads its limits).
    for (int w = 0; w < 2; w++) {
        time_launches((launch_fn)real[0], k, 2000);
        time_launches((launch_fn)hooked[0], k, 2000);
        time_allocs((alloc_fn)real[1], (free_fn)real[2], 200);
        time_allocs((alloc_fn)hooked[1], (free_fn)hooked[2], 200);
    }
    std::vector<double> lr, lh, ar, ah;
    for (int r = 0; r < rounds; r++) {
        bool real_first = r % 2 == 0; // alternate the order too
        for (int s = 0; s < 2; s++) {
            bool use_real = (s == 0) == real_first;
            void **t = use_real ? real : hooked;
            (use_real ? lr : lh).push_back(time_launches((launch_fn)t[0], k, 5000));
            (use_real ? ar : ah).push_back(time_allocs((alloc_fn)t[1], (free_fn)t[2], 300));
        }
    }
    double mlr = median(lr), mlh = median(lh), mar = median(ar), mah = median(ah);
    printf("{\"interposed\": %s, \"rounds\": %d, \"launch_real_us\": %.4f, \"launch_hooked_us\": "
           "%.4f, \"launch_delta_us\": %.4f, \"alloc_pair_real_us\": %.3f, "
           "\"alloc_pair_hooked_us\": %.3f, \"alloc_pair_ratio\": %.4f, \"launch_real_q1_us\": %.4f, "
           "\"launch_hooked_q1_us\": %.4f, \"launch_real_q3_us\": %.4f, \"launch_hooked_q3_us\": %.4f}\n",
           hooked[0] != real[0] ? "true" : "false", rounds, mlr, mlh, mlh - mlr, mar, mah, mah / mar,
           quantile(lr, 0.25), quantile(lh, 0.25), quantile(lr, 0.75), quantile(lh, 0.75));
    return 0;
}
