/* /metrics: the view in Prometheus text format (0.0.4). Base units (bytes,
 * seconds), ratios 0-1, counters end in _total, every family has HELP and
 * TYPE (`promtool check metrics` runs in tests/monitor/metrics_test.py).
 * docs/monitor.md has the table of every metric. */
#define _GNU_SOURCE
#include "monitor/metrics.h"

#include <stdio.h>
#include <stdlib.h>

#include "contract/contract.h"

/* GS_VERSION and GS_GIT_REV come from the Makefile (monitor/module.mk). */

/* A label value, escaped as the text format asks. */
static void put_label(FILE *f, const char *name, const char *v, int first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", name);
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(f, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", f);
        else
            fputc(*v, f);
    }
    fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* ---- per GPU ---- */

static void gpu_labels(FILE *f, const struct gs_view_gpu *g)
{
    fprintf(f, "{gpu=\"%d\"", g->index);
    put_label(f, "uuid", g->uuid, 0);
    put_label(f, "name", g->name, 0);
    fputc('}', f);
}

enum gpu_value { G_TOTAL, G_ALLOCATABLE, G_ALLOCATED, G_FREE, G_SLICES };
static const struct {
    const char *name, *help;
    enum gpu_value what;
    int needs_size; /* only where the GPU's sizes are known */
} gpu_defs[] = {
    {GS_METRIC_GPU_MEMORY_TOTAL, "Device memory in the GPU's pool.", G_TOTAL, 1},
    {GS_METRIC_GPU_MEMORY_ALLOCATABLE,
     "Device memory the node offers to slices (the pool less the tenants' context reserve).",
     G_ALLOCATABLE, 1},
    {GS_METRIC_GPU_MEMORY_ALLOCATED,
     "Device memory the slices on the GPU may allocate (their caps).", G_ALLOCATED, 0},
    {GS_METRIC_GPU_MEMORY_FREE, "Allocatable device memory no slice holds yet.", G_FREE, 1},
    {GS_METRIC_GPU_SLICES, "Slices on the GPU.", G_SLICES, 0},
};

static unsigned long long gpu_value(const struct gs_view_gpu *g, enum gpu_value w)
{
    switch (w) {
    case G_TOTAL: return g->total;
    case G_ALLOCATABLE: return g->allocatable;
    case G_ALLOCATED: return g->allocated;
    case G_FREE: return gs_view_gpu_free(g);
    default: return (unsigned long long)g->slices;
    }
}

static void gpu_metrics(FILE *f, const struct gs_view *v)
{
    for (size_t k = 0; k < sizeof gpu_defs / sizeof gpu_defs[0]; k++) {
        family(f, gpu_defs[k].name, "gauge", gpu_defs[k].help);
        for (int g = 0; g < v->ngpu; g++) {
            if (gpu_defs[k].needs_size && !v->gpu[g].total)
                continue;
            fputs(gpu_defs[k].name, f);
            gpu_labels(f, &v->gpu[g]);
            fprintf(f, " %llu\n", gpu_value(&v->gpu[g], gpu_defs[k].what));
        }
    }
}

/* ---- per slice ---- */

static void slice_labels(FILE *f, const struct gs_view_row *r)
{
    put_label(f, "slice", r->id, 1);
    put_label(f, "device", r->lim.device, 0);
    put_label(f, "simulated", r->lim.simulated ? "true" : "false", 0);
    put_label(f, "namespace", r->ns, 0);
    put_label(f, "pod", r->pod, 0);
    put_label(f, "container", r->container, 0);
}

enum slice_value {
    S_LIMIT,
    S_USED,
    S_PEAK,
    S_PROCS,
    S_SHARE,
    S_GPU_SECONDS,
    S_ALLOCS,
    S_OOMS,
    S_LAUNCHES,
    S_CUDA_SEEN
};
static const struct {
    const char *name, *type, *help;
    enum slice_value what;
} slice_defs[] = {
    {GS_METRIC_MEMORY_LIMIT, "gauge",
     "Device memory the slice's application may allocate (0 = no cap).", S_LIMIT},
    {GS_METRIC_MEMORY_USED, "gauge", "Device memory the slice's live processes hold now.", S_USED},
    {GS_METRIC_MEMORY_PEAK, "gauge", "Largest device memory one process of the slice held.",
     S_PEAK},
    {GS_METRIC_PROCESSES, "gauge",
     "Live processes of the slice, as seen from the monitor's pid namespace.", S_PROCS},
    {GS_METRIC_COMPUTE_SHARE, "gauge",
     "Compute share of one GPU, 0-1 (0 = not compute-controlled).", S_SHARE},
    {GS_METRIC_GPU_SECONDS, "counter",
     "GPU time the compute controller charged the slice: its windows from first launch to "
     "drained, or a latency-critical tenant's requests.",
     S_GPU_SECONDS},
    {GS_METRIC_ALLOCATIONS, "counter", "Allocations counted against the slice.", S_ALLOCS},
    {GS_METRIC_OOM, "counter", "Allocations refused by the slice's memory cap.", S_OOMS},
    {GS_METRIC_LAUNCHES, "counter", "Kernel and graph launches seen.", S_LAUNCHES},
    {GS_METRIC_CUDA_SEEN, "gauge",
     "1 once a process of the slice used CUDA; 0 = held, never used (CPU fallback?).", S_CUDA_SEEN},
};

static void slice_value(FILE *f, const struct gs_view_row *r, enum slice_value w)
{
    switch (w) {
    case S_LIMIT: fprintf(f, "%llu", (unsigned long long)r->lim.memory); break;
    case S_USED: fprintf(f, "%llu", (unsigned long long)r->used); break;
    case S_PEAK: fprintf(f, "%llu", (unsigned long long)r->peak); break;
    case S_PROCS: fprintf(f, "%d", r->procs); break;
    case S_SHARE: fprintf(f, "%g", (double)r->lim.compute / 100.0); break;
    case S_GPU_SECONDS: fprintf(f, "%.9f", (double)r->gpu_ns / 1e9); break;
    case S_ALLOCS: fprintf(f, "%llu", (unsigned long long)r->allocs); break;
    case S_OOMS: fprintf(f, "%llu", (unsigned long long)r->ooms); break;
    case S_LAUNCHES: fprintf(f, "%llu", (unsigned long long)r->launches); break;
    default: fprintf(f, "%d", r->first_ctx_ns != 0); break;
    }
}

static void slice_metrics(FILE *f, const struct gs_view *v)
{
    for (size_t k = 0; k < sizeof slice_defs / sizeof slice_defs[0]; k++) {
        family(f, slice_defs[k].name, slice_defs[k].type, slice_defs[k].help);
        for (int i = 0; i < v->n; i++) {
            fprintf(f, "%s{", slice_defs[k].name);
            slice_labels(f, &v->rows[i]);
            fputs("} ", f);
            slice_value(f, &v->rows[i], slice_defs[k].what);
            fputc('\n', f);
        }
    }
    /* The latency-critical tenants' requests, as a summary without quantiles:
     * rate(_sum) / rate(_count) is their mean duration. */
    family(f, GS_METRIC_REQUEST_DURATION, "summary",
           "Requests of a latency-critical slice: from the first launch after its work was "
           "seen finished to the synchronisation that saw the request finished.");
    for (int i = 0; i < v->n; i++) {
        const struct gs_view_row *r = &v->rows[i];
        if (r->lim.priority != GS_PRIO_CRITICAL)
            continue;
        fprintf(f, "%s_sum{", GS_METRIC_REQUEST_DURATION);
        slice_labels(f, r);
        fprintf(f, "} %.9f\n%s_count{", (double)r->request_ns / 1e9, GS_METRIC_REQUEST_DURATION);
        slice_labels(f, r);
        fprintf(f, "} %llu\n", (unsigned long long)r->requests);
    }
}

/* ---- the audit ---- */

/* One audit figure per slice the audit saw: its bytes, or whether it is over. */
static void audit_series(FILE *f, const struct gs_view *v, const char *name, int over)
{
    for (int i = 0; i < v->n; i++) {
        const struct gs_audit_slice *a = v->rows[i].audit;
        if (!a)
            continue;
        fprintf(f, "%s{", name);
        slice_labels(f, &v->rows[i]);
        fprintf(f, "} %llu\n", over ? (unsigned long long)a->over : (unsigned long long)a->bytes);
    }
}

/* The audit's families are declared whether it runs or not, so that what
 * the monitor exports does not depend on the node (deploy/'s rules name
 * them); their samples are there only while it runs (gpuslice_audit_up 1). */
static void audit_metrics(FILE *f, const struct gs_view *v, const struct gs_audit *a)
{
    int on = a && a->available;
    family(f, GS_METRIC_AUDIT_UP, "gauge",
           "1 when the audit reads the driver's per-process view (NVML).");
    fprintf(f, GS_METRIC_AUDIT_UP " %d\n", on);
    family(f, GS_METRIC_AUDIT_BYTES, "gauge",
           "Device memory the driver charges the slice's processes (NVML, contexts included).");
    if (on)
        audit_series(f, v, GS_METRIC_AUDIT_BYTES, 0);
    family(f, GS_METRIC_AUDIT_OVER, "gauge",
           "1 when the slice holds more than its cap and one context per process: the "
           "interposer was bypassed.");
    if (on)
        audit_series(f, v, GS_METRIC_AUDIT_OVER, 1);
    uint64_t ub = 0;
    for (int i = 0; on && i < a->nunsliced && i < 64; i++)
        ub += a->unsliced[i].bytes;
    family(f, GS_METRIC_AUDIT_UNSLICED, "gauge",
           "GPU processes that belong to no slice on this node.");
    if (on)
        fprintf(f, GS_METRIC_AUDIT_UNSLICED " %d\n", a->nunsliced);
    family(f, GS_METRIC_AUDIT_UNSLICED_BYTES, "gauge", "Device memory those processes hold.");
    if (on)
        fprintf(f, GS_METRIC_AUDIT_UNSLICED_BYTES " %llu\n", (unsigned long long)ub);
}

char *gs_metrics_text(const struct gs_view *v, const struct gs_audit *audit)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    family(f, GS_METRIC_BUILD_INFO, "gauge", "The monitor's build: version and git revision.");
    fputs(GS_METRIC_BUILD_INFO "{", f);
    put_label(f, "version", GS_VERSION, 1);
    put_label(f, "revision", GS_GIT_REV, 0);
    fputs("} 1\n", f);
    family(f, GS_METRIC_SLICES, "gauge", "Slices on this node.");
    fprintf(f, GS_METRIC_SLICES " %d\n", v->n);
    gpu_metrics(f, v);
    slice_metrics(f, v);
    audit_metrics(f, v, audit);
    if (fclose(f) != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}
