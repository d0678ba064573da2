/* Tenant checks: every slice's ledger (src/contract/ledger.h) says whether a
 * process ever used CUDA through the interposer (first_ctx_ns). A slice held
 * longer than the grace period with no CUDA use is the silent CPU fallback
 * (or an interposer that was never loaded). On unified-memory boards (Jetson)
 * GPU memory is the board's RAM: the slices together must fit in it, and a
 * Pod's memory request must count its GPU slice, or the scheduler hands out
 * the same RAM twice. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "contract/ledger.h"
#include "contract/limits.h"
#include "contract/nodefile.h"
#include "node/mps.h"
#include "common/quantity.h"
#include "contract/slice.h"
#include "node/audit.h"
#include "doctor/doctor.h"
#include "kube/yamljson.h"

/* What the OS, K3s and the agent need on an edge board, at the least. */
#define UNIFIED_RESERVE (1ull << 30)

static void fmt_age(uint64_t s, char *buf, size_t len)
{
    if (s >= 86400)
        snprintf(buf, len, "%llud %lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s % 86400 / 3600));
    else if (s >= 3600)
        snprintf(buf, len, "%lluh %llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s % 3600 / 60));
    else
        snprintf(buf, len, "%llum %llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
}

struct totals {
    size_t slices, used_cuda, mps;
    uint64_t memory; /* sum of memory caps */
};

static void check_slice(struct gs_doctor *d, const char *id, struct totals *t)
{
    char limits[PATH_MAX], ledger[PATH_MAX];
    if (snprintf(limits, sizeof limits, "%s/%s/" GS_SLICE_LIMITS, d->state_dir, id) >=
            (int)sizeof limits ||
        snprintf(ledger, sizeof ledger, "%s/%s/" GS_SLICE_LEDGER, d->state_dir, id) >=
            (int)sizeof ledger)
        return;
    struct gs_limits l;
    gs_error err = {0};
    if (gs_limits_load(limits, &l, &err) < 0) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_WARN, "tenant.limits-unreadable",
                                             "slice %s has no readable limits file", id);
        gs_finding_evidence(f, "%s", err.msg);
        gs_finding_fix(f, "The agent writes it at Allocate; a slice without it runs uncapped. "
                          "Restart the Pod holding it so the agent allocates it again.");
        return;
    }
    t->slices++;
    t->memory += l.memory;
    t->mps += l.sharing == GS_SHARING_MPS;
    struct stat st;
    uint64_t age = 0;
    time_t now = time(NULL);
    if (stat(limits, &st) == 0 && now > st.st_mtime)
        age = (uint64_t)(now - st.st_mtime);
    struct gs_ledger_summary sum;
    if (gs_ledger_read_summary(ledger, &sum, &err) < 0) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_WARN, "tenant.ledger-unreadable",
                                             "slice %s: its ledger cannot be read", id);
        gs_finding_evidence(f, "%s", err.msg);
        gs_finding_fix(f, "The interposer cannot count usage in this slice either: delete the "
                          "Pod holding it so the agent makes a fresh ledger.");
        return;
    }
    if (sum.first_ctx_ns) {
        t->used_cuda++;
        return;
    }
    if (age < d->grace_s)
        return;
    char agebuf[32], mem[32];
    fmt_age(age, agebuf, sizeof agebuf);
    gs_quantity_format_bytes(l.memory, mem, sizeof mem);
    struct gs_finding *f = gs_report_add(
        d->rep, GS_SEV_WARN, "tenant.no-cuda",
        "slice %s is held for %s but CUDA was never used in it: the interposer is not loaded, or "
        "the app silently fell back to the CPU",
        id, agebuf);
    gs_finding_evidence(f,
                        "%s: first_ctx_ns = 0 (no process ever created a CUDA context), %d "
                        "processes, %llu bytes in use",
                        ledger + strlen(d->root), sum.live, (unsigned long long)sum.used);
    gs_finding_evidence(f, "limits: memory %s, compute %llu%%, device %s",
                        l.memory ? mem : "uncapped", (unsigned long long)l.compute,
                        l.device[0] ? l.device : "?");
    gs_finding_fix(f, "Find its Pod with `gpuslice monitor`. Inside it: `ls /run/gpuslice/limits` "
                      "and `echo $LD_PRELOAD` (or cat /etc/ld.so.preload) must name "
                      "libgpuslice.so; `python3 -c 'import torch; "
                      "print(torch.cuda.is_available())'` must print True. If it prints False or "
                      "libcuda.so.1 is missing, the Pod runs without the nvidia runtime: see "
                      "cluster.pod-no-runtimeclass and runtime.nvidia-handler-missing.");
}

/* The node's gpu-memory unit label ("64Mi"), or NULL. */
static const char *unit_text(const struct gs_doctor *d)
{
    const cJSON *md = cJSON_GetObjectItemCaseSensitive(d->this_node, "metadata");
    return gs_yamljson_str(cJSON_GetObjectItemCaseSensitive(md, "labels"), GS_LABEL_MEMORY_UNIT);
}

/* Bytes of one gpuslice.io/gpu-memory unit; 0 when unknown. */
static uint64_t memory_unit(const struct gs_doctor *d)
{
    const char *u = unit_text(d);
    uint64_t v = 0;
    if (!u || gs_quantity_parse_bytes(u, &v, NULL) < 0)
        return 0;
    return v;
}

static void check_unified_cluster(struct gs_doctor *d)
{
    if (!d->this_node)
        return;
    uint64_t unit = memory_unit(d);
    if (!unit) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_INFO, "tenant.unified-unit-unknown",
                          "Pod memory requests not compared with GPU slices: the gpu-memory unit "
                          "is not known");
        gs_finding_evidence(f, "node %s has no label " GS_LABEL_MEMORY_UNIT, d->node);
        gs_finding_fix(f, "The agent publishes it; an agent that does not is older than this "
                          "doctor.");
        return;
    }
    char a[32], b[32];
    const cJSON *alloc = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(d->this_node, "status"), "allocatable");
    const char *units = gs_yamljson_str(alloc, GS_RES_MEMORY_NAME);
    uint64_t n = 0;
    if (units && gs_quantity_parse_bytes(units, &n, NULL) == 0 && d->mem_total &&
        n <= UINT64_MAX / unit && n * unit > d->mem_total) {
        gs_quantity_format_bytes(n * unit, a, sizeof a);
        gs_quantity_format_bytes(d->mem_total, b, sizeof b);
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_ERROR, "tenant.unified-pool-too-big",
            "the node advertises %s of GPU memory but the board has %s of RAM in all", a, b);
        gs_finding_evidence(f, "allocatable %s = %s x %s; /proc/meminfo MemTotal = %s",
                            GS_RES_MEMORY_NAME, units, unit_text(d), b);
        gs_finding_fix(f, "The agent's pool must be MemTotal minus the reserve for the OS and K3s: "
                          "check its configuration (pool size / reserve) and restart it.");
    }
    const cJSON *p;
    cJSON_ArrayForEach(p, d->pods)
    {
        const char *node = gs_yamljson_str(cJSON_GetObjectItemCaseSensitive(p, "spec"), "nodeName");
        uint64_t gu = 0, mem = 0;
        if (!node || strcmp(node, d->node) || !gs_cluster_pod_active(p) ||
            !gs_cluster_pod_request(p, GS_RES_MEMORY_NAME, &gu) || gu == 0 ||
            gu > UINT64_MAX / unit)
            continue;
        uint64_t gbytes = gu * unit;
        int has_mem = gs_cluster_pod_request(p, "memory", &mem);
        if (has_mem && mem >= gbytes)
            continue;
        char name[300];
        gs_cluster_obj_name(p, name, sizeof name);
        gs_quantity_format_bytes(gbytes, a, sizeof a);
        gs_quantity_format_bytes(mem, b, sizeof b);
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_WARN, "tenant.unified-pod-memory",
            "Pod %s has a %s GPU slice but %s: on this unified-memory board both come out of "
            "the same RAM, so the scheduler hands it out twice",
            name, a, has_mem ? "requests less memory than that" : "no memory request");
        gs_finding_evidence(f, "%s=%llu (x %s) = %s; memory request %s", GS_RES_MEMORY_NAME,
                            (unsigned long long)gu, unit_text(d), a, has_mem ? b : "not set");
        gs_finding_fix(f,
                       "Set resources.requests.memory to at least %lluMi plus the process's "
                       "own CPU working set (e.g. %lluMi), so the scheduler counts the RAM once.",
                       (unsigned long long)(gbytes >> 20),
                       (unsigned long long)((gbytes >> 20) + 512));
    }
}

/* The MPS control daemon the agent runs (its node file says mps_daemon =
 * auto): down, every MPS tenant time-slices, slices or not yet. */
static int check_agent_mps(struct gs_doctor *d, const struct gs_nodefile *nf, size_t n)
{
    const char *shown = gs_doctor_shown(d, d->mps_pipe_dir);
    pid_t pid = 0;
    char why[128];
    char seen[512];
    snprintf(seen, sizeof seen,
             "the agent's node file: mps_daemon = auto, last seen %s%s, pid %ld, started %ld "
             "time(s) again%s%s",
             nf->mps_state[0] ? nf->mps_state : "(not said)",
             nf->mps_started ? " (started by the agent)" : "", nf->mps_pid, nf->mps_restarts,
             nf->mps_error[0] ? "; its last start failed: " : "", nf->mps_error);
    if (gs_mps_daemon_answers("", d->mps_pipe_dir, &pid, why, sizeof why)) {
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_OK, "tenant.mps-daemon",
            "the MPS control daemon the agent runs answers at %s/" GS_MPS_CONTROL_SOCKET, shown);
        gs_finding_evidence(f, "%s", seen);
        return 1;
    }
    char slices[64] = "";
    if (n)
        snprintf(slices, sizeof slices, " (%zu slice(s) set to MPS)", n);
    struct gs_finding *f = gs_report_add(
        d->rep, GS_SEV_ERROR, "tenant.mps-daemon-down",
        "the MPS control daemon the agent runs does not answer at %s: MPS tenants%s time-slice, "
        "and their MPS priority and thread limits do nothing",
        shown, slices);
    gs_finding_evidence(f, "%s/" GS_MPS_CONTROL_SOCKET ": %s", shown, why);
    gs_finding_evidence(f, "%s", seen);
    gs_finding_fix(
        f, "The agent starts it again with back-off and logs why it cannot: read the agent's log "
           "(`kubectl -n gpuslice-system logs ds/gpuslice-agent -c agent`) and control.log in its "
           "mps_log_dir. A missing program: set mps_control to NVIDIA's nvidia-cuda-mps-control; "
           "a read-only folder: mount mps_pipe_dir and mps_log_dir writable into the agent's Pod; "
           "or run the daemon yourself and set mps_daemon = external (docs/agent.md).");
    return 0;
}

/* Slices set to run as MPS clients (agent compute_sharing = mps) need the
 * node's MPS daemon; without it they time-slice and their MPS settings do
 * nothing, which nothing else reports. */
static void check_mps(struct gs_doctor *d, size_t n, const struct gs_nodefile *nf)
{
    if (!d->mps_pipe_dir_given && nf->mps && nf->mps_pipe_dir[0] == '/' &&
        gs_doctor_path(d, nf->mps_pipe_dir, d->mps_pipe_dir, sizeof d->mps_pipe_dir) != 0)
        return;
    const char *shown = gs_doctor_shown(d, d->mps_pipe_dir);
    if (d->platform == GS_PLAT_JETSON) {
        if (!n)
            return;
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "tenant.mps-unsupported",
                          "%zu slice(s) are set to run as MPS clients, but Jetson has no MPS", n);
        gs_finding_evidence(f, "limits files with sharing = mps under %s", d->state_dir);
        gs_finding_fix(f, "Set compute_sharing = timeslice in the agent's config "
                          "(gpuslice-agent-config) and restart the Pods.");
        return;
    }
    if (nf->mps && nf->mps_auto && !check_agent_mps(d, nf, n))
        return; /* tenant.mps-daemon-down says it all */
    if (!n)
        return;
    char why[128];
    if (gs_mps_daemon_answers("", d->mps_pipe_dir, NULL, why, sizeof why)) {
        gs_report_add(d->rep, GS_SEV_OK, "tenant.mps",
                      "%zu slice(s) run as MPS clients; the MPS daemon's control socket is at "
                      "%s/control",
                      n, shown);
        return;
    }
    struct gs_finding *f = gs_report_add(
        d->rep, GS_SEV_ERROR, "tenant.mps-no-daemon",
        "%zu slice(s) are set to run as MPS clients, but no MPS daemon listens at %s: they "
        "time-slice and their MPS priority and thread limits do nothing",
        n, shown);
    gs_finding_evidence(f, "%s/" GS_MPS_CONTROL_SOCKET ": %s", shown, why);
    gs_finding_fix(f,
                   "Start the daemon on the host with the agent's mps_pipe_dir: "
                   "`CUDA_MPS_PIPE_DIRECTORY=%s nvidia-cuda-mps-control -d` (its pipe directory "
                   "must match; give --mps-pipe-dir if the agent uses another), or set "
                   "mps_daemon = auto and the agent runs it, or set "
                   "compute_sharing = timeslice in the agent's config.",
                   shown);
}

/* The independent audit (node/audit.h), on a live node only: NVML's per-process
 * memory against each slice's cap, and GPU processes of no slice. */
static void check_audit(struct gs_doctor *d)
{
    struct gs_audit_ctx ctx = {0};
    struct gs_audit *a = calloc(1, sizeof *a);
    if (!a)
        return;
    gs_audit_run(&ctx, d->state_dir, "/proc", a);
    if (!a->available) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_INFO, "tenant.audit-unavailable",
                          "the audit of real GPU memory per slice could not run");
        gs_finding_evidence(f, "%s", a->why);
        gs_finding_fix(f, "Run the doctor on the GPU node itself, as root in the host's pid "
                          "namespace, with the NVIDIA driver's libnvidia-ml.so.1 present.");
    }
    for (int i = 0; a->available && i < a->nslice; i++) {
        const struct gs_audit_slice *s = &a->slice[i];
        if (!s->over)
            continue;
        char b[32], c[32];
        gs_quantity_format_bytes(s->bytes, b, sizeof b);
        gs_quantity_format_bytes(s->allowed, c, sizeof c);
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_ERROR, "tenant.audit-over-cap",
            "slice %s holds %s on the GPU against %s allowed: its cap was not enforced", s->id, b,
            c);
        gs_finding_evidence(f, "NVML: %d process(es) of the slice (first pid %d), tied to it by %s",
                            s->nproc, (int)s->pids[0],
                            s->how == GS_AUDIT_MOUNT ? "their limits mount" : "their environment");
        gs_finding_fix(f, "Something in that container bypasses the interposer (a statically "
                          "linked program, a second copy of the driver, a tampered ledger). Find "
                          "its Pod with `gpuslice monitor`; `gpuslice monitor --audit kill` stops "
                          "such processes as soon as it sees them.");
    }
    if (a->available && a->nunsliced) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_WARN, "tenant.audit-unsliced",
                          "%d process(es) use the GPU outside any gpuslice slice", a->nunsliced);
        for (int i = 0; i < a->nunsliced && i < 8; i++) {
            char b[32];
            gs_quantity_format_bytes(a->unsliced[i].bytes, b, sizeof b);
            gs_finding_evidence(f, "pid %d: %s on GPU %d", (int)a->unsliced[i].pid, b,
                                a->unsliced[i].gpu);
        }
        gs_finding_fix(f, "A Pod given the GPU without a gpuslice resource (NVIDIA_VISIBLE_DEVICES"
                          "=all in its image, or NVIDIA's device plugin beside ours), or a process "
                          "on the host. `cat /proc/<pid>/cgroup` names its Pod; give it a slice or "
                          "move it off this GPU.");
    }
    if (a->available && !a->over && !a->nunsliced)
        gs_report_add(d->rep, GS_SEV_OK, "tenant.audit",
                      "every GPU process belongs to a slice and holds no more than it may");
    free(a);
    gs_audit_close(&ctx);
}

void gs_tenants_check(struct gs_doctor *d)
{
    struct totals t = {0};
    DIR *dir = opendir(d->state_dir);
    if (!dir) {
        gs_report_add(d->rep, GS_SEV_INFO, "tenant.no-slices",
                      "no slice state on this node (%s does not exist)",
                      gs_doctor_shown(d, d->state_dir));
    } else {
        char *names[1024];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(dir)) != NULL && n < 1024)
            if (gs_slice_listed(e->d_name) && (names[n] = strdup(e->d_name)) != NULL)
                n++;
        closedir(dir);
        for (size_t i = 0; i < n; i++) /* readdir order is not stable: sort */
            for (size_t k = i + 1; k < n; k++)
                if (strcmp(names[k], names[i]) < 0) {
                    char *x = names[i];
                    names[i] = names[k];
                    names[k] = x;
                }
        for (size_t i = 0; i < n; i++) {
            check_slice(d, names[i], &t);
            free(names[i]);
        }
        gs_report_add(d->rep, t.slices ? GS_SEV_OK : GS_SEV_INFO,
                      t.slices ? "tenant.slices" : "tenant.no-slices",
                      "%zu slice(s) on this node, %zu used CUDA", t.slices, t.used_cuda);
    }
    struct gs_nodefile nf;
    if (gs_nodefile_load(d->state_dir, &nf, NULL) < 0)
        memset(&nf, 0, sizeof nf);
    if (t.mps || nf.mps)
        check_mps(d, t.mps, &nf);
    if (!d->root[0])
        check_audit(d);
    if (d->platform != GS_PLAT_JETSON)
        return;
    if (d->mem_total && t.memory + UNIFIED_RESERVE > d->mem_total) {
        char a[32], b[32];
        gs_quantity_format_bytes(t.memory, a, sizeof a);
        gs_quantity_format_bytes(d->mem_total, b, sizeof b);
        struct gs_finding *f = gs_report_add(
            d->rep, t.memory > d->mem_total ? GS_SEV_ERROR : GS_SEV_WARN,
            "tenant.unified-overcommit",
            "the slices on this board add up to %s of GPU memory; the board has %s of RAM for "
            "everything",
            a, b);
        gs_finding_evidence(f,
                            "%zu slices, memory caps summed: %s; /proc/meminfo MemTotal: %s; "
                            "at least 1 GiB is needed for the OS and K3s",
                            t.slices, a, b);
        gs_finding_fix(f, "Lower the GPU memory of some Pods, or the agent's pool so it leaves "
                          "the OS and K3s their reserve; the kernel's OOM killer picks a victim "
                          "otherwise.");
    }
    check_unified_cluster(d);
}
