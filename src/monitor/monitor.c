/* gpuslice monitor: what each slice on this node holds and really uses, from
 * the slices' own files (view.c), joined with the kubelet's PodResources and
 * the node's GPUs. A terminal table, or JSON for scripts (--json); with
 * --listen a dashboard, /metrics, /api/slices and /api/history (serve.c).
 * docs/monitor.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/quantity.h"
#include "contract/contract.h"
#include "monitor/monitor.h"
#include "monitor/view.h"

int gs_cmd_monitor(int argc, char **argv);

static int said_over(const struct gs_monitor_audit *ar, const char *id)
{
    for (int i = 0; i < ar->nsaid_over; i++)
        if (!strcmp(ar->said_over[i], id))
            return 1;
    return 0;
}

static int said_pid(const struct gs_monitor_audit *ar, int pid)
{
    for (int i = 0; i < ar->nsaid_pid; i++)
        if (ar->said_pid[i] == pid)
            return 1;
    return 0;
}

const struct gs_audit *gs_monitor_audit(struct gs_monitor_audit *ar, const char *root,
                                        struct gs_view *v)
{
    if (ar->mode == GS_MONITOR_AUDIT_OFF)
        return NULL;
    if (!ar->last && !(ar->last = calloc(1, sizeof *ar->last)))
        return NULL;
    struct gs_audit *a = ar->last;
    gs_audit_run(&ar->ctx, root, ar->proc, a);
    if (!a->available)
        return a;
    char over_now[GS_MONITOR_AUDIT_SAID][GS_SLICE_ID_MAX + 1];
    int nover = 0;
    for (int i = 0; i < a->nslice; i++) {
        const struct gs_audit_slice *s = &a->slice[i];
        for (int k = 0; k < v->n; k++)
            if (!strcmp(v->rows[k].id, s->id))
                v->rows[k].audit = s;
        if (!s->over)
            continue;
        if (nover < GS_MONITOR_AUDIT_SAID)
            snprintf(over_now[nover++], sizeof over_now[0], "%s", s->id);
        if (!said_over(ar, s->id)) {
            char b[32], c[32];
            gs_quantity_format_bytes(s->bytes, b, sizeof b);
            gs_quantity_format_bytes(s->allowed, c, sizeof c);
            fprintf(stderr,
                    "gpuslice monitor: AUDIT: slice %s holds %s on the GPU (NVML, %d process(es)) "
                    "against %s allowed (its cap and one context each): the interposer was "
                    "bypassed%s\n",
                    s->id, b, s->nproc, c,
                    ar->mode == GS_MONITOR_AUDIT_KILL ? "; stopping its processes" : "");
        }
        if (ar->mode == GS_MONITOR_AUDIT_KILL)
            for (int p = 0; p < s->nproc && p < GS_AUDIT_SLICE_PIDS; p++)
                if (s->pids[p] > 1 && kill(s->pids[p], SIGKILL) != 0)
                    fprintf(stderr, "gpuslice monitor: AUDIT: cannot stop pid %d: %s\n",
                            (int)s->pids[p], strerror(errno));
    }
    for (int i = 0; i < ar->nsaid_over; i++) {
        int still = 0;
        for (int k = 0; k < nover && !still; k++)
            still = !strcmp(over_now[k], ar->said_over[i]);
        if (!still)
            fprintf(stderr, "gpuslice monitor: AUDIT: slice %s is within its cap again\n",
                    ar->said_over[i]);
    }
    memcpy(ar->said_over, over_now, sizeof over_now[0] * (size_t)nover);
    ar->nsaid_over = nover;
    int pids[GS_MONITOR_AUDIT_SAID], npid = 0;
    for (int i = 0; i < a->nunsliced && i < GS_MONITOR_AUDIT_SAID; i++) {
        pids[npid++] = (int)a->unsliced[i].pid;
        if (said_pid(ar, (int)a->unsliced[i].pid))
            continue;
        char b[32];
        gs_quantity_format_bytes(a->unsliced[i].bytes, b, sizeof b);
        fprintf(stderr,
                "gpuslice monitor: AUDIT: pid %d holds %s on GPU %d and belongs to no slice\n",
                (int)a->unsliced[i].pid, b, a->unsliced[i].gpu);
    }
    memcpy(ar->said_pid, pids, sizeof pids[0] * (size_t)npid);
    ar->nsaid_pid = npid;
    return a;
}

static const char *cuda_seen(const struct gs_view_row *r, char *buf, size_t len)
{
    if (!r->have_ledger)
        return "no ledger";
    if (!r->first_ctx_ns)
        return "never (CPU fallback?)";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    snprintf(buf, len, "%llus ago",
             (unsigned long long)(t > r->first_ctx_ns ? (t - r->first_ctx_ns) / 1000000000ull : 0));
    return buf;
}

static void print_gpus(const struct gs_view *v)
{
    for (int g = 0; g < v->ngpu; g++) {
        const struct gs_view_gpu *u = &v->gpu[g];
        char tot[32] = "?", alc[32], fr[32] = "?";
        if (u->total)
            gs_quantity_format_bytes(u->total, tot, sizeof tot);
        gs_quantity_format_bytes(u->allocated, alc, sizeof alc);
        if (u->allocatable)
            gs_quantity_format_bytes(gs_view_gpu_free(u), fr, sizeof fr);
        printf("GPU %d %s (%s) on %s: %s, %s allocated to %d slice(s), %s free for slices\n",
               u->index, u->name[0] ? u->name : "?", u->uuid, v->node, tot, alc, u->slices, fr);
    }
}

static void print_table(const struct gs_view *v, const char *root)
{
    print_gpus(v);
    printf("%-28s %-32s %11s %11s %11s %5s %-12s %6s %10s  %s\n", "SLICE", "POD/CONTAINER",
           "MEMORY CAP", "IN USE", "PEAK", "PROCS", "COMPUTE", "OOMS", "LAUNCHES",
           "FIRST CUDA USE");
    for (int i = 0; i < v->n; i++) {
        const struct gs_view_row *r = &v->rows[i];
        char cap[32], used[32], peak[32], comp[32], seen[32], who[400];
        if (r->pod[0])
            snprintf(who, sizeof who, "%s/%s/%s", r->ns, r->pod, r->container);
        else
            snprintf(who, sizeof who, "-");
        if (r->lim.memory)
            gs_quantity_format_bytes(r->lim.memory, cap, sizeof cap);
        else
            snprintf(cap, sizeof cap, "none");
        gs_quantity_format_bytes(r->used, used, sizeof used);
        gs_quantity_format_bytes(r->peak, peak, sizeof peak);
        if (r->lim.compute)
            snprintf(comp, sizeof comp, "%llu%%%s%s", (unsigned long long)r->lim.compute,
                     r->lim.compute_mode == GS_COMPUTE_CAP ? " cap" : "",
                     r->lim.priority == GS_PRIO_CRITICAL ? " rt" : "");
        else
            snprintf(comp, sizeof comp, "-%s", r->lim.priority == GS_PRIO_CRITICAL ? " rt" : "");
        printf("%-28s %-32s %11s %11s %11s %5d %-12s %6llu %10llu  %s%s\n", r->id, who, cap, used,
               peak, r->procs, comp, (unsigned long long)r->ooms, (unsigned long long)r->launches,
               cuda_seen(r, seen, sizeof seen), r->lim.simulated ? " [SIMULATED GPU]" : "");
    }
    if (v->n == 0)
        printf("(no slices in %s)\n", root);
}

/* The terminal view or the JSON, once or every interval seconds. */
static int show(struct gs_monitor_audit *ar, struct gs_view_src *src, int json, int once,
                long interval)
{
    for (;;) {
        struct gs_view v;
        if (gs_view_take(src, &v) < 0) {
            gs_view_free(&v);
            return 1;
        }
        const struct gs_audit *audit = gs_monitor_audit(ar, src->root, &v);
        if (json) {
            char *s = gs_view_json(&v, src->root, audit);
            if (s)
                puts(s);
            free(s);
        } else {
            if (!once)
                printf("\033[H\033[2J");
            print_table(&v, src->root);
        }
        gs_view_free(&v);
        fflush(stdout);
        if (once || json)
            return 0;
        sleep((unsigned)interval);
    }
}

static void usage(void)
{
    printf("usage: gpuslice monitor [--state-root DIR] [--once] [--interval S] [--json]\n"
           "                        [--listen ADDRESS] [--pod-resources-socket PATH]\n"
           "                        [--audit auto|off|kill] [--proc DIR]\n"
           "Shows each slice on this node: its limits and what its processes use, and each\n"
           "GPU: its memory, what the slices hold of it.\n"
           "--listen serves a dashboard at /, Prometheus /metrics, JSON /api/slices and\n"
           "/api/history instead. ADDRESS: :%d (every address, IPv6 and IPv4; %d is\n"
           "gpuslice's port), 127.0.0.1:%d, [::1]:%d, or a port alone (the loopback).\n"
           "--interval: seconds between views (default 2; with --listen, between the\n"
           "dashboard's history samples).\n"
           "Pods come from the kubelet's PodResources socket (\"\" = do not ask).\n"
           "--audit auto|off|kill: compare each slice's cap with what the driver says\n"
           "its processes hold (NVML; needs the host's pid namespace). auto (default)\n"
           "reports, kill also stops the processes of a slice over its cap.\n"
           "--proc DIR: where the host's /proc is (default /proc).\n",
           GS_MONITOR_PORT, GS_MONITOR_PORT, GS_MONITOR_PORT, GS_MONITOR_PORT);
}

int gs_cmd_monitor(int argc, char **argv)
{
    static const struct option opts[] = {{"state-root", required_argument, 0, 'r'},
                                         {"json", no_argument, 0, 'j'},
                                         {"once", no_argument, 0, '1'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"listen", required_argument, 0, 'l'},
                                         {"pod-resources-socket", required_argument, 0, 'p'},
                                         {"audit", required_argument, 0, 'a'},
                                         {"proc", required_argument, 0, 'P'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *root = GS_STATE_ROOT_DEFAULT;
    int json = 0, once = 0, c;
    const char *listen_on = NULL;
    const char *podres = GS_PODRES_SOCKET_DEFAULT;
    struct gs_monitor_audit ar = {.mode = GS_MONITOR_AUDIT_AUTO, .proc = "/proc"};
    long interval = 2;
    optind = 1;
    while ((c = getopt_long(argc, argv, "r:j1i:l:p:a:P:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': podres = optarg; break;
        case 'a':
            if (!strcmp(optarg, "off"))
                ar.mode = GS_MONITOR_AUDIT_OFF;
            else if (!strcmp(optarg, "auto"))
                ar.mode = GS_MONITOR_AUDIT_AUTO;
            else if (!strcmp(optarg, "kill"))
                ar.mode = GS_MONITOR_AUDIT_KILL;
            else {
                fprintf(stderr, "gpuslice monitor: --audit '%s' must be auto, off or kill\n",
                        optarg);
                return 2;
            }
            break;
        case 'P': ar.proc = optarg; break;
        case 'l': listen_on = optarg; break;
        case 'r': root = optarg; break;
        case 'j': json = 1; break;
        case '1': once = 1; break;
        case 'i': {
            char *end;
            interval = strtol(optarg, &end, 10);
            if (*end || interval < 1 || interval > 3600) {
                fprintf(stderr, "gpuslice monitor: --interval '%s' must be 1..3600 seconds\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'h': usage(); return 0;
        default: return 2;
        }
    }
    struct gs_view_src src;
    gs_view_src_init(&src, root, podres);
    int rc = listen_on ? gs_serve(listen_on, &src, &ar, (int)interval)
                       : show(&ar, &src, json, once, interval);
    free(ar.last);
    gs_audit_close(&ar.ctx);
    return rc;
}
