/* gpuslice run: one workload under a slice on any machine, no kubelet.
 * It prepares the same per-allocation state the agent prepares at Allocate
 * (contract/slice.c), loads libgpuslice.so into the command with LD_PRELOAD,
 * and reports what the slice saw when the command ends. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "node/resources.h"
#include "run/run.h"
#include "common/gs_cuda.h"
#include "contract/ledger.h"
#include "node/mps.h"
#include "common/log.h"
#include "common/quantity.h"
#include "contract/slice.h"

/* An option of a number or "off" (0) into the limits' key, or -1 with the
 * limits table's reason said (--guard, --prime: microseconds; --power-guard:
 * percent). */
static int set_or_off(struct gs_limits *lim, const char *key, const char *opt, const char *arg,
                      const char *unit)
{
    gs_error err = {0};
    if (!strcmp(arg, "off"))
        arg = "0";
    if (gs_config_set(gs_limits_table, gs_limits_table_len, lim, key, arg, &err) == 0)
        return 0;
    fprintf(stderr, "gpuslice run: %s: %s (%s, or off)\n", opt, err.msg, unit);
    return -1;
}

/* A setting for some commands only (--guard, --prime, --power-guard): -1 with
 * why said where it was given to one it does not apply to; where it was not
 * given and applies, its default. */
static int for_some(uint64_t *value, int given, int applies, uint64_t def, const char *why)
{
    if (*value && !applies) {
        fprintf(stderr, "gpuslice run: %s\n", why);
        return -1;
    }
    if (!given && applies)
        *value = def;
    return 0;
}

static void run_usage(FILE *out)
{
    fprintf(out,
            "usage: gpuslice run [options] -- COMMAND [ARGS...]\n"
            "Runs COMMAND with its GPU memory capped and its compute share set.\n\n"
            "  --memory Q      device memory the application may allocate (512Mi, 2Gi, 4G)\n"
            "  --compute P     compute share, percent of one GPU (1-100)\n"
            "  --hard-cap      never exceed --compute, even when the GPU is idle\n"
            "  --critical      latency-critical class: best-effort tenants yield to it\n"
            "  --yield MODE    as a best-effort tenant next to a busy critical one: gate (stop\n"
            "                  launching), bound (keep one kernel in flight) or shrink (bound,\n"
            "                  on --green-sms SMs only; for --sharing mps); default: gate\n"
            "                  with --sharing timeslice, bound with --sharing mps\n"
            "  --green-sms N   with --yield shrink: SMs kept while a critical tenant is busy\n"
            "                  (default: half the GPU's; rounded up to the GPU's SM groups)\n"
            "  --guard US|off  with --yield gate: in a critical tenant's gaps between requests,\n"
            "                  launch only kernels that should end US microseconds before its\n"
            "                  next request is due (learnt from its last gaps); default 600\n"
            "  --prime US|off  with --critical on --sharing timeslice: touch the GPU in this\n"
            "                  command's own context US microseconds before its next request\n"
            "                  is due (learnt from its last gaps), so the GPU has switched back\n"
            "                  from a best-effort tenant's context by then; default 250\n"
            "  --power-guard P|off  as a best-effort command next to an active critical\n"
            "                  one: while the GPU's power limit holds its SM clock below P %%\n"
            "                  of its maximum, use less of the GPU's time (down to a quarter),\n"
            "                  so the critical command's requests keep the clock; default 93\n"
            "  --sharing S     timeslice (contexts take turns, the default) or mps (run side by\n"
            "                  side as clients of a running NVIDIA MPS daemon; critical tenants\n"
            "                  get normal client priority, best-effort ones below normal)\n"
            "  --mps-threads P with --sharing mps: MPS active thread percentage (1-100)\n"
            "  --simulated     use the simulated GPU (no NVIDIA driver needed; clearly labelled)\n"
            "  --state-root D  where the slice's state lives (default: $XDG_RUNTIME_DIR/gpuslice,\n"
            "                  /run/gpuslice-run as root, else /tmp/gpuslice-<uid>)\n"
            "  --keep-state    leave the state directory for inspection\n"
            "The slice counts the application's allocations; the CUDA context's own memory\n"
            "(about 0.5 GiB per process on an H200) comes on top: see docs/resources.md.\n");
}

static int exe_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *slash = strrchr(buf, '/');
    if (!slash)
        return -1;
    *slash = '\0';
    return 0;
}

/* First existing file among dir-relative candidates and fixed paths. */
static int find_file(char *out, size_t len, const char *env, const char *const rel[], size_t nrel)
{
    const char *e = env ? getenv(env) : NULL;
    if (e && *e) {
        snprintf(out, len, "%s", e);
        return access(out, R_OK) == 0 ? 0 : -1;
    }
    char dir[PATH_MAX];
    if (exe_dir(dir, sizeof dir) < 0)
        return -1;
    for (size_t i = 0; i < nrel; i++) {
        int n = rel[i][0] == '/' ? snprintf(out, len, "%s", rel[i])
                                 : snprintf(out, len, "%s/%s", dir, rel[i]);
        if (n > 0 && (size_t)n < len && access(out, R_OK) == 0)
            return 0;
    }
    return -1;
}

struct gpu_facts {
    char name[128];
    size_t total;
    int ok;
};

/* Asks the driver the run will use what the GPU is (cuInit creates no context). */
static void probe_gpu(const char *lib, int device, struct gpu_facts *g, char *why, size_t whylen)
{
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, whylen, "%.400s", dlerror());
        return;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*name)(char *, int, CUdevice) =
        (CUresult(*)(char *, int, CUdevice))dlsym(h, "cuDeviceGetName");
    CUresult (*total)(size_t *, CUdevice) =
        (CUresult(*)(size_t *, CUdevice))dlsym(h, "cuDeviceTotalMem_v2");
    CUdevice dev;
    CUresult rc;
    if (!init || !get || !name || !total) {
        snprintf(why, whylen, "%.300s lacks the CUDA driver entry points", lib);
    } else if ((rc = init(0)) != CUDA_SUCCESS) {
        snprintf(why, whylen, "cuInit failed with CUDA error %d (is /dev/nvidia* accessible?)", rc);
    } else if ((rc = get(&dev, device)) != CUDA_SUCCESS) {
        snprintf(why, whylen, "GPU %d not found (CUDA error %d)", device, rc);
    } else if (name(g->name, sizeof g->name, dev) == CUDA_SUCCESS &&
               total(&g->total, dev) == CUDA_SUCCESS) {
        g->ok = 1;
    }
    /* Not closed: unloading a driver library mid-process is not safe. */
}

/* The probe runs in a child: the parent then holds no driver state while the
 * workload runs (a parent that called cuInit changes what the workload's
 * start-up costs, and measurements must not carry that). */
static void probe_gpu_isolated(const char *lib, int device, struct gpu_facts *g, char *why,
                               size_t whylen)
{
    int pfd[2];
    if (pipe(pfd) != 0) {
        probe_gpu(lib, device, g, why, whylen);
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        probe_gpu(lib, device, g, why, whylen);
        return;
    }
    struct probe_msg {
        struct gpu_facts g;
        char why[512];
    } msg;
    if (pid == 0) {
        close(pfd[0]);
        memset(&msg, 0, sizeof msg);
        probe_gpu(lib, device, &msg.g, msg.why, sizeof msg.why);
        ssize_t w = write(pfd[1], &msg, sizeof msg);
        _exit(w == (ssize_t)sizeof msg ? 0 : 1);
    }
    close(pfd[1]);
    memset(&msg, 0, sizeof msg);
    size_t got = 0;
    while (got < sizeof msg) {
        ssize_t r = read(pfd[0], (char *)&msg + got, sizeof msg - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (got != sizeof msg) {
        snprintf(why, whylen, "the GPU probe process died (status %d)", st);
        return;
    }
    msg.g.name[sizeof msg.g.name - 1] = '\0';
    msg.why[sizeof msg.why - 1] = '\0';
    *g = msg.g;
    snprintf(why, whylen, "%s", msg.why);
}

static pid_t child_pid;
static void forward(int sig)
{
    if (child_pid > 0)
        kill(child_pid, sig);
}

static void default_state_root(char *out, size_t len)
{
    const char *x = getenv("XDG_RUNTIME_DIR");
    if (x && *x)
        snprintf(out, len, "%s/" GS_RUN_ROOT_XDG_SUBDIR, x);
    else if (geteuid() == 0)
        snprintf(out, len, GS_RUN_ROOT_ROOT);
    else
        snprintf(out, len, GS_RUN_ROOT_TMP_PREFIX "%ld", (long)geteuid());
}

static void prepend_env(const char *name, const char *value, char sep)
{
    const char *old = getenv(name);
    if (!old || !*old) {
        setenv(name, value, 1);
        return;
    }
    size_t n = strlen(value) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s%c%s", value, sep, old);
    setenv(name, v, 1);
    free(v);
}

int gs_cmd_run(int argc, char **argv)
{
    static const struct option opts[] = {
        {"memory", required_argument, 0, 'm'},
        {"compute", required_argument, 0, 'c'},
        {"hard-cap", no_argument, 0, 'H'},
        {"critical", no_argument, 0, 'C'},
        {"simulated", no_argument, 0, 'S'},
        {"state-root", required_argument, 0, 'r'},
        {"keep-state", no_argument, 0, 'k'},
        {"yield", required_argument, 0, 'y'},
        {"sharing", required_argument, 0, 's'},
        {"mps-threads", required_argument, 0, 't'},
        {"green-sms", required_argument, 0, 'g'},
        {"guard", required_argument, 0, 'G'},
        {"prime", required_argument, 0, 'P'},
        {"power-guard", required_argument, 0, 'W'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    struct gs_limits lim;
    gs_limits_defaults(&lim);
    int simulated = 0, keep = 0, have_mem = 0, have_cpu = 0, have_yield = 0, have_guard = 0,
        have_prime = 0, have_power = 0;
    char root[PATH_MAX] = "";
    gs_error err = {0};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "+m:c:hS", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            /* A bare number is refused with the hint (nvidia-smi counts in MiB). */
            if (gs_quantity_parse_size(optarg, &lim.memory, &err) < 0 || lim.memory == 0) {
                fprintf(stderr, "gpuslice run: --memory: %s\n",
                        lim.memory == 0 && !err.msg[0] ? "must be above 0" : err.msg);
                return 2;
            }
            have_mem = 1;
            break;
        case 'c': {
            unsigned p;
            if (gs_quantity_parse_percent(optarg, &p, &err) < 0) {
                fprintf(stderr, "gpuslice run: --compute: %s\n", err.msg);
                return 2;
            }
            lim.compute = p;
            have_cpu = 1;
            break;
        }
        case 'H': lim.compute_mode = GS_COMPUTE_CAP; break;
        case 'C': lim.priority = GS_PRIO_CRITICAL; break;
        case 'y':
            /* The names come from the limits table, like the file's. */
            if (gs_config_set(gs_limits_table, gs_limits_table_len, &lim, "yield", optarg, NULL) <
                0) {
                fprintf(stderr, "gpuslice run: --yield '%s' is not gate, bound or shrink\n",
                        optarg);
                return 2;
            }
            have_yield = 1;
            break;
        case 's':
            if (gs_config_set(gs_limits_table, gs_limits_table_len, &lim, "sharing", optarg, NULL) <
                0) {
                fprintf(stderr, "gpuslice run: --sharing '%s' is not timeslice or mps\n", optarg);
                return 2;
            }
            break;
        case 't': {
            unsigned p;
            if (gs_quantity_parse_percent(optarg, &p, &err) < 0) {
                fprintf(stderr, "gpuslice run: --mps-threads: %s\n", err.msg);
                return 2;
            }
            lim.mps_threads = p;
            break;
        }
        case 'g':
            if (gs_config_set(gs_limits_table, gs_limits_table_len, &lim, "green_sms", optarg,
                              &err) < 0) {
                fprintf(stderr, "gpuslice run: --green-sms: %s\n", err.msg);
                return 2;
            }
            break;
        case 'G':
            have_guard = 1;
            if (set_or_off(&lim, "guard_us", "--guard", optarg, "microseconds") < 0)
                return 2;
            break;
        case 'P':
            have_prime = 1;
            if (set_or_off(&lim, "prime_us", "--prime", optarg, "microseconds") < 0)
                return 2;
            break;
        case 'W':
            have_power = 1;
            if (set_or_off(&lim, "power_guard", "--power-guard", optarg, "percent 0-100") < 0)
                return 2;
            break;
        case 'S': simulated = 1; break;
        case 'r': snprintf(root, sizeof root, "%s", optarg); break;
        case 'k': keep = 1; break;
        case 'h': run_usage(stdout); return 0;
        default: run_usage(stderr); return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "gpuslice run: no command given\n\n");
        run_usage(stderr);
        return 2;
    }
    if (!have_mem && !have_cpu) {
        fprintf(stderr, "gpuslice run: give --memory and/or --compute: a slice needs a limit\n");
        return 2;
    }
    if (lim.mps_threads && lim.sharing != GS_SHARING_MPS) {
        fprintf(stderr, "gpuslice run: --mps-threads needs --sharing mps\n");
        return 2;
    }
    if (lim.green_sms && lim.yield != GS_YIELD_SHRINK) {
        fprintf(stderr, "gpuslice run: --green-sms needs --yield shrink\n");
        return 2;
    }
    if (lim.sharing == GS_SHARING_MPS && !have_yield)
        lim.yield = GS_YIELD_BOUND; /* side by side, a gated best-effort tenant would starve */
    if (for_some(&lim.guard_us, have_guard, gs_limits_guard_applies(&lim), GS_GUARD_DEFAULT_US,
                 "--guard is for a best-effort command with --yield gate (the default on "
                 "--sharing timeslice)") < 0 ||
        for_some(&lim.prime_us, have_prime, gs_limits_prime_applies(&lim), GS_PRIME_DEFAULT_US,
                 "--prime is for a --critical command on --sharing timeslice (a best-effort "
                 "command's launches are not requests to prime; under MPS the tenants share one "
                 "context: nothing to switch)") < 0 ||
        for_some(&lim.power_guard, have_power, gs_limits_power_guard_applies(&lim),
                 GS_POWER_GUARD_DEFAULT_PCT,
                 "--power-guard is for a best-effort command (it lowers this command's use of "
                 "the GPU for a latency-critical one's sake)") < 0)
        return 2;
    if (lim.compute_mode == GS_COMPUTE_CAP && !have_cpu) {
        fprintf(stderr, "gpuslice run: --hard-cap needs --compute N\n");
        return 2;
    }

    char lib[PATH_MAX];
    static const char *const lib_rel[] = {"libgpuslice.so", "../lib/gpuslice/libgpuslice.so",
                                          "/usr/local/lib/gpuslice/libgpuslice.so"};
    if (find_file(lib, sizeof lib, GS_ENV_INTERPOSER, lib_rel, 3) < 0) {
        fprintf(stderr,
                "gpuslice run: libgpuslice.so not found next to the gpuslice binary or in "
                "/usr/local/lib/gpuslice (set GPUSLICE_INTERPOSER=/path/to/libgpuslice.so)\n");
        return 3;
    }
    char driver[PATH_MAX] = "libcuda.so.1";
    if (simulated) {
        static const char *const sim_rel[] = {"sim/libcuda.so.1",
                                              "../lib/gpuslice/sim/libcuda.so.1"};
        if (find_file(driver, sizeof driver, NULL, sim_rel, 2) < 0) {
            fprintf(stderr, "gpuslice run: the simulated GPU (sim/libcuda.so.1) is not built next "
                            "to gpuslice: run 'make' first\n");
            return 3;
        }
        lim.simulated = 1;
    }
    if (!root[0])
        default_state_root(root, sizeof root);
    /* The same allocation code as the agent's Allocate: the inventory backend
     * sizes the GPU, the context reserve is set aside, and the slice's state
     * is prepared exactly as for a Pod. */
    struct gs_agent_config ac;
    gs_agent_config_defaults(&ac, NULL);
    if (strlen(root) >= sizeof ac.state_root) {
        fprintf(stderr,
                "gpuslice run: --state-root is longer than %zu characters; choose a shorter path\n",
                sizeof ac.state_root - 1);
        return 2;
    }
    memcpy(ac.state_root, root, strlen(root) + 1);
    ac.backend = simulated ? GS_BACKEND_SIMULATED : GS_BACKEND_AUTO;
    char id[64];
    snprintf(id, sizeof id, "run-%ld", (long)getpid());
    struct gs_limits want = lim;
    struct gs_slice_paths paths;
    if (gs_resources_standalone_slice(&ac, have_mem ? want.memory : 0, (unsigned)want.compute,
                                      want.priority == GS_PRIO_CRITICAL, id, &lim, &paths,
                                      &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        return 3;
    }
    /* What only a standalone run can ask for: no memory cap at all, and the
     * hard compute cap (an agent setting in a cluster). */
    lim.compute_mode = want.compute_mode;
    lim.yield = want.yield;
    lim.sharing = want.sharing;
    lim.mps_threads = want.mps_threads;
    lim.green_sms = want.green_sms;
    lim.guard_us = want.guard_us;
    lim.prime_us = want.prime_us;
    lim.power_guard = want.power_guard;
    lim.simulated = simulated;
    if (!have_mem)
        lim.memory = 0;
    if (gs_limits_write(paths.limits, &lim, &err) < 0) {
        fprintf(stderr, "gpuslice run: %s\n", err.msg);
        gs_slice_remove(root, id, NULL);
        return 3;
    }

    struct gpu_facts gpu = {0};
    char why[512] = "";
    /* Ask the driver about the GPU the slice is on, seen as the workload will see it. */
    if (!simulated && lim.device[0])
        setenv("CUDA_VISIBLE_DEVICES", lim.device, 1);
    probe_gpu_isolated(driver, 0, &gpu, why, sizeof why);
    if (!gpu.ok) {
        if (simulated)
            fprintf(stderr, "gpuslice run: the simulated GPU failed: %s\n", why);
        else
            fprintf(stderr,
                    "gpuslice run: no usable CUDA driver: %s.\n"
                    "  The driver is found as the CUDA runtime finds it: libcuda.so.1 through the\n"
                    "  library search path (check 'ldconfig -p | grep libcuda', LD_LIBRARY_PATH).\n"
                    "  Install the NVIDIA driver, or add --simulated to try gpuslice on the "
                    "simulated GPU.\n",
                    why);
        gs_slice_remove(root, id, NULL);
        return 3;
    }
    char mem_s[32], tot_s[32];
    gs_quantity_format_bytes(lim.memory, mem_s, sizeof mem_s);
    gs_quantity_format_bytes(gpu.total, tot_s, sizeof tot_s);
    fprintf(stderr, "gpuslice run: slice %s on %s%s (%s)\n", lim.slice_id,
            simulated ? "SIMULATED GPU " : "GPU ", gpu.name, tot_s);
    if (have_mem)
        fprintf(stderr,
                "  memory : %s for the application's allocations; the CUDA context's own memory\n"
                "           (~0.5 GiB per process on an H200, 70 MiB more once stream-ordered\n"
                "           pools are used) is outside the slice\n",
                mem_s);
    if (have_mem && lim.memory > gpu.total)
        fprintf(stderr,
                "  warning: the slice is larger than the GPU (%s): the GPU runs out first\n",
                tot_s);
    if (have_cpu)
        fprintf(stderr, "  compute: %llu%% %s%s\n", (unsigned long long)lim.compute,
                lim.compute_mode == GS_COMPUTE_CAP
                    ? "hard cap (never above)"
                    : "share (guaranteed under contention, uses idle time)",
                lim.priority == GS_PRIO_CRITICAL ? ", latency-critical" : "");
    if (lim.sharing == GS_SHARING_MPS) {
        char pipe[PATH_MAX];
        const char *pd = getenv(GS_ENV_MPS_PIPE_DIR);
        int daemon =
            gs_mps_daemon_present("", pd && *pd ? pd : GS_MPS_DEFAULT_PIPE_DIR, pipe, sizeof pipe);
        char thr[32] = "all threads";
        if (lim.mps_threads)
            snprintf(thr, sizeof thr, "%u%% of the threads", (unsigned)lim.mps_threads);
        fprintf(stderr, "  sharing: MPS client, %s priority, %s\n",
                lim.priority == GS_PRIO_CRITICAL ? "normal" : "below-normal", thr);
        if (!daemon)
            fprintf(
                stderr,
                "  warning: no MPS control daemon at %s: the command will time-slice.\n"
                "           Start one (nvidia-cuda-mps-control -d, same CUDA_MPS_PIPE_DIRECTORY)\n",
                pipe);
    }
    if (lim.yield == GS_YIELD_SHRINK && lim.priority != GS_PRIO_CRITICAL) {
        char sms[32] = "half the GPU's SMs";
        if (lim.green_sms)
            snprintf(sms, sizeof sms, "%u SMs", (unsigned)lim.green_sms);
        fprintf(stderr, "  yield  : next to a busy latency-critical tenant, kernels run on %s%s\n",
                sms,
                lim.sharing == GS_SHARING_MPS
                    ? ""
                    : " (this helps under --sharing mps; time-sliced contexts take turns anyway)");
    }
    if (lim.guard_us)
        fprintf(stderr,
                "  guard  : next to a latency-critical tenant, kernels go out in its gaps only if "
                "they should end %llu us before its next request\n",
                (unsigned long long)lim.guard_us);
    if (lim.power_guard)
        fprintf(stderr,
                "  power  : next to an active latency-critical tenant, uses less of the GPU while "
                "its power limit holds the clock below %llu %% of its maximum\n",
                (unsigned long long)lim.power_guard);
    if (lim.prime_us)
        fprintf(stderr,
                "  prime  : the GPU is switched back to this command's context %llu us before "
                "its next request is due\n",
                (unsigned long long)lim.prime_us);
    fprintf(stderr, "  state  : %s\n", paths.dir);
    fflush(stderr);

    child_pid = fork();
    if (child_pid < 0) {
        fprintf(stderr, "gpuslice run: fork failed: %s\n", strerror(errno));
        gs_slice_remove(root, id, NULL);
        return 3;
    }
    if (child_pid == 0) {
        prepend_env("LD_PRELOAD", lib, ':');
        setenv(GS_ENV_STATE_DIR, paths.dir, 1);
        setenv(GS_ENV_SLICE_ID, lim.slice_id, 1);
        if (simulated) {
            char simdir[PATH_MAX];
            snprintf(simdir, sizeof simdir, "%s", driver);
            *strrchr(simdir, '/') = '\0';
            prepend_env("LD_LIBRARY_PATH", simdir, ':');
            setenv("GS_FAKE_BANNER", "1", 0);
        }
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "gpuslice run: cannot run '%s': %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    struct sigaction sa = {0};
    sa.sa_handler = forward;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status = 0;
    while (waitpid(child_pid, &status, 0) < 0 && errno == EINTR)
        ;

    struct gs_ledger_summary sum;
    if (gs_ledger_read_summary(paths.ledger, &sum, &err) == 0) {
        char peak_s[32];
        gs_quantity_format_bytes(sum.peak, peak_s, sizeof peak_s);
        fprintf(stderr,
                "gpuslice run: %d process(es) used CUDA; largest per-process peak %s; %llu "
                "allocations, %llu refused by the cap; %llu launches%s\n",
                sum.ever, peak_s, (unsigned long long)sum.allocs, (unsigned long long)sum.refused,
                (unsigned long long)sum.launches,
                sum.ever == 0 ? " (the command never used CUDA: CPU fallback?)" : "");
    }
    if (!keep)
        gs_slice_remove(root, id, NULL);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
