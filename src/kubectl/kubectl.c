/* gpuslice kubectl, installed as kubectl-gpuslice so that `kubectl gpuslice`
 * runs it (kubectl finds plugins by that name on PATH): the cluster seen from
 * an operator's desk (docs/cli.md).
 *
 *   request MEMORY  the resources block for a size in bytes, in the node's unit
 *                   (its label gpuslice.io/gpu-memory-unit, or --unit offline)
 *   top             every node's slices: which Pod holds which, what it uses, its state,
 *                   from each monitor's /api/slices through the API server's
 *                   pods/proxy (a GET: no exec rights needed to look)
 *   doctor          gpuslice doctor on a node, run in its agent Pod through
 *                   pods/exec, its report and exit status passed on
 *
 * Only the API server is contacted, with the kubeconfig kubectl would use. */
#define _GNU_SOURCE /* asprintf */
#include "kubectl/kubectl.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/quantity.h"
#include "contract/contract.h"
#include "kube/kube.h"
#include "kube/yamljson.h"

struct opts {
    const char *kubeconfig, *context, *ns, *selector, *container, *node, *unit, *tenant_ns;
    const char *port;
    unsigned compute;
    int realtime;
    char home_kubeconfig[4096];
};

static void usage(FILE *out, const char *prog)
{
    fprintf(
        out,
        "usage: %s <command> [options]\n"
        "\n"
        "commands:\n"
        "  request MEMORY  print the resources block that asks for MEMORY (like 3Gi) of GPU\n"
        "                  memory in the node's units, rounded up to whole units (on a\n"
        "                  DRA node: a ResourceClaimTemplate's spec, docs/dra.md)\n"
        "  top             which Pod holds which slice on which node, and what it uses\n"
        "  doctor          run gpuslice doctor on a node in its agent Pod; what follows a\n"
        "                  lone -- goes to the doctor ('gpuslice help doctor' lists it)\n"
        "\n"
        "options:\n"
        "  --compute P           request: also ask for P %% of one GPU's compute (1-100)\n"
        "  --realtime            request: also ask for the latency-critical slot\n"
        "  --unit SIZE           request: the node's memory unit (like 256Mi), without asking\n"
        "                        the API server\n"
        "  --node NODE           request: that node's unit; top: that node only; doctor: the\n"
        "                        node to check (needed when there is more than one)\n"
        "  -n, --namespace NS    top: only the Pods of namespace NS\n"
        "  --kubeconfig FILE     default $KUBECONFIG, then ~/.kube/config, then the in-cluster\n"
        "                        service account, then /etc/rancher/k3s/k3s.yaml\n"
        "  --context NAME        a context of the kubeconfig other than its current one\n"
        "  --system-namespace NS where gpuslice's Pods run (default " GS_K8S_NAMESPACE ")\n"
        "  --selector SEL        label selector of the agent's Pods (default\n"
        "                        " GS_K8S_AGENT_SELECTOR ")\n"
        "  --port PORT           top: the monitor's port in those Pods (default: the\n"
        "                        containerPort named " GS_K8S_MONITOR_PORT_NAME ")\n"
        "  --container NAME      doctor: the agent's container (default " GS_K8S_AGENT_CONTAINER
        ")\n"
        "  -h, --help            this text\n"
        "\n"
        "Rights: request reads nodes (get, list); top lists Pods in the system namespace and\n"
        "GETs their pods/proxy; doctor creates pods/exec there. docs/cli.md has the Role.\n"
        "Exit status: 0 done (doctor: the doctor's own status), 1 the cluster answered\n"
        "with an error, 2 usage error.\n",
        prog);
}

/* ---- the API server ----------------------------------------------------------- */

static int open_kube(struct opts *o, struct gs_kube *k)
{
    gs_error err = {0};
    struct gs_kube_opts ko = {.kubeconfig = o->kubeconfig,
                              .context = o->context,
                              .root = "",
                              .agent = "kubectl-gpuslice"};
    /* kubectl's own default after $KUBECONFIG; the doctor on a node does not read it. */
    const char *home = getenv("HOME");
    struct stat st;
    if (!ko.kubeconfig && !(getenv("KUBECONFIG") && *getenv("KUBECONFIG")) && home && *home) {
        snprintf(o->home_kubeconfig, sizeof o->home_kubeconfig, "%s/.kube/config", home);
        if (stat(o->home_kubeconfig, &st) == 0)
            ko.kubeconfig = o->home_kubeconfig;
    }
    if (gs_kube_open(k, &ko, &err) < 0) {
        fprintf(stderr, "kubectl gpuslice: cannot reach the API server: %s\n", err.msg);
        return -1;
    }
    return 0;
}

/* GET a list or an object; prints the error (with the RBAC hint on 401/403). */
static cJSON *fetch(struct gs_kube *k, const char *path, int list, const char *rights)
{
    cJSON *out = NULL;
    long status = 0;
    gs_error err = {0};
    int rc = list ? gs_kube_list(k, path, &out, &status, &err)
                  : gs_kube_get(k, path, &out, &status, &err);
    if (rc == 0)
        return out;
    fprintf(stderr, "kubectl gpuslice: %s\n", err.msg);
    if (status == 401 || status == 403)
        fprintf(stderr, "kubectl gpuslice: this needs %s (docs/cli.md has a Role that grants it)\n",
                rights);
    cJSON_Delete(out);
    return NULL;
}

static const cJSON *get(const cJSON *o, const char *a)
{
    return cJSON_GetObjectItemCaseSensitive(o, a);
}

static const char *label(const cJSON *obj, const char *key)
{
    return gs_yamljson_str(get(get(obj, "metadata"), "labels"), key);
}

/* ---- request -------------------------------------------------------------------- */

/* A size the user typed: a bare number is refused the way `gpuslice run --memory`
 * refuses it (nvidia-smi and HAMi count in MiB; bytes are never meant). */
static int parse_size(const char *what, const char *s, uint64_t *out)
{
    gs_error err = {0};
    if (gs_quantity_parse_size(s, out, &err) < 0 || *out == 0) {
        fprintf(stderr, "kubectl gpuslice: %s: %s\n", what,
                *out == 0 && !err.msg[0] ? "must be above 0" : err.msg);
        return -1;
    }
    return 0;
}

/* The unit from the nodes' labels: --node's, or the one every labelled node
 * shares; *dra when those nodes run the agent as a DRA driver (mode dra). */
static int unit_from_cluster(struct opts *o, uint64_t *unit, int *dra, char *from, size_t fromlen)
{
    struct gs_kube k;
    if (open_kube(o, &k) < 0)
        return 1;
    char *path = NULL, *esc = gs_kube_escape(o->node ? o->node : GS_LABEL_MEMORY_UNIT);
    if (!esc ||
        asprintf(&path, o->node ? "/api/v1/nodes/%s" : "/api/v1/nodes?labelSelector=%s", esc) < 0) {
        free(esc);
        gs_kube_close(&k);
        return 1;
    }
    free(esc);
    cJSON *got = fetch(&k, path, !o->node, "get and list on nodes");
    free(path);
    gs_kube_close(&k);
    if (!got)
        return 1;
    cJSON *one = NULL;
    if (o->node) { /* one Node object: treat it as a list of one */
        one = got;
        got = cJSON_CreateArray();
        cJSON_AddItemReferenceToArray(got, one);
    }
    int rc = 0, n = 0;
    char first[256] = "", seen[1024] = "";
    const cJSON *node;
    *unit = 0;
    *dra = -1;
    cJSON_ArrayForEach(node, got)
    {
        const char *name = gs_yamljson_str(get(node, "metadata"), "name");
        const char *u = label(node, GS_LABEL_MEMORY_UNIT);
        const char *mode = label(node, GS_LABEL_MODE);
        uint64_t v = 0;
        if (mode && !strcmp(mode, "replica")) {
            fprintf(stderr,
                    "kubectl gpuslice: node %s is in replica mode (" GS_LABEL_MODE
                    "=replica): it advertises whole replicas, not " GS_RES_MEMORY_NAME
                    "; ask for " GS_RES_NVIDIA_NAME ": 1 (docs/resources.md)\n",
                    name ? name : "?");
            rc = 1;
            break;
        }
        if (!u) {
            fprintf(stderr,
                    "kubectl gpuslice: node %s has no label " GS_LABEL_MEMORY_UNIT
                    ": no gpuslice agent runs there, or it cannot label its node (docs/agent.md, "
                    "node_labels); give --unit SIZE if you know the unit\n",
                    name ? name : "?");
            rc = 1;
            break;
        }
        gs_error err = {0};
        if (gs_quantity_parse_bytes(u, &v, &err) < 0 || v == 0) {
            fprintf(stderr, "kubectl gpuslice: node %s: label " GS_LABEL_MEMORY_UNIT "=%s: %s\n",
                    name ? name : "?", u, err.msg[0] ? err.msg : "is 0");
            rc = 1;
            break;
        }
        size_t sl = strlen(seen);
        snprintf(seen + sl, sizeof seen - sl, "%s%s %s", sl ? ", " : "", name ? name : "?", u);
        int is_dra = mode && !strcmp(mode, "dra");
        if (*dra >= 0 && is_dra != *dra) {
            fprintf(stderr,
                    "kubectl gpuslice: some nodes run gpuslice as a DRA driver (" GS_LABEL_MODE
                    "=dra), others as a device plugin: a Pod asks each differently; give --node "
                    "NODE for the node the Pod goes to\n");
            rc = 1;
            break;
        }
        *dra = is_dra;
        if (*unit && v != *unit) {
            fprintf(stderr,
                    "kubectl gpuslice: the nodes' units differ (%s): the same request means a "
                    "different size on each; give --node NODE for the node the Pod goes to (and "
                    "pin it there with a nodeSelector)\n",
                    seen);
            rc = 1;
            break;
        }
        if (!*unit)
            snprintf(first, sizeof first, "%s", name ? name : "?");
        *unit = v;
        n++;
    }
    if (rc == 0 && n == 0) {
        fprintf(stderr, "kubectl gpuslice: no node has the label " GS_LABEL_MEMORY_UNIT
                        ": is the gpuslice agent deployed (deploy/README.md)? Give --unit SIZE "
                        "to work offline\n");
        rc = 1;
    }
    if (rc == 0 && n == 1)
        snprintf(from, fromlen, "node %s, label " GS_LABEL_MEMORY_UNIT, first);
    else if (rc == 0)
        snprintf(from, fromlen, "%d nodes, label " GS_LABEL_MEMORY_UNIT, n);
    cJSON_Delete(got);
    cJSON_Delete(one);
    return rc;
}

static int cmd_request(struct opts *o, int argc, char **argv)
{
    if (argc != 1) {
        fprintf(stderr, "kubectl gpuslice request: give one size, like 'request 3Gi --compute "
                        "30'\n");
        return 2;
    }
    uint64_t want = 0, unit = 0;
    int dra = 0;
    char from[512];
    if (parse_size("request", argv[0], &want) < 0)
        return 2;
    if (o->unit) {
        if (o->node) {
            fprintf(stderr, "kubectl gpuslice request: --unit and --node exclude each other\n");
            return 2;
        }
        if (parse_size("--unit", o->unit, &unit) < 0)
            return 2;
        snprintf(from, sizeof from, "--unit");
    } else {
        int rc = unit_from_cluster(o, &unit, &dra, from, sizeof from);
        if (rc)
            return rc;
    }
    uint64_t units = want / unit + (want % unit != 0);
    char w[32], u[32], got[32];
    gs_quantity_format_bytes(want, w, sizeof w);
    gs_quantity_format_bytes(unit, u, sizeof u);
    gs_quantity_format_bytes(units * unit, got, sizeof got);
    printf("# %s (%s) of GPU memory at %s a unit (%s)\n", argv[0], w, u, from);
    if (want % unit)
        printf("# %s is not a whole number of units: rounded up to %llu units, %s\n", argv[0],
               (unsigned long long)units, got);
    if (dra) {
        /* A DRA node (docs/dra.md): a claim asks for bytes and percent; memory
         * in steps of the unit, as the ResourceSlice's request policy has it. */
        char q[32];
        gs_quantity_format_k8s(units * unit, q, sizeof q);
        printf("# a DRA node: the ResourceClaimTemplate's spec (its Pod names it in "
               "resourceClaims)\nspec:\n  spec:\n    devices:\n      requests:\n"
               "        - name: gpu\n          exactly:\n            deviceClassName: %s\n"
               "            capacity:\n              requests:\n                " GS_DRA_CAP_MEMORY
               ": %s\n",
               GS_DRA_DRIVER_DEFAULT, q);
        if (o->compute)
            printf("                " GS_DRA_CAP_CORES ": \"%u\"  # %% of the GPU's time\n",
                   o->compute);
        if (o->realtime)
            printf(
                "      config:\n        - requests: [gpu]\n          opaque:\n            "
                "driver: %s\n            parameters:\n              apiVersion: " GS_DRA_PARAMS_API
                "\n              kind: " GS_DRA_PARAMS_KIND
                "\n              priority: " GS_DRA_PRIO_CRITICAL "\n",
                GS_DRA_DRIVER_DEFAULT);
        return 0;
    }
    printf("resources:\n  limits:\n    " GS_RES_MEMORY_NAME ": %llu  # %s\n",
           (unsigned long long)units, got);
    if (o->compute)
        printf("    " GS_RES_COMPUTE_NAME ": %u  # %% of one GPU\n", o->compute);
    if (o->realtime)
        printf("    " GS_RES_REALTIME_NAME ": 1  # latency-critical\n");
    return 0;
}

/* ---- the agent's Pods ----------------------------------------------------------- */

/* The running Pods the selector finds (on o->node only, when given). */
static cJSON *agent_pods(struct opts *o, struct gs_kube *k, const char *rights)
{
    char *sel = gs_kube_escape(o->selector), *path = NULL, *field = NULL;
    char *node = o->node ? gs_kube_escape(o->node) : NULL;
    if (!sel || (o->node && !node) ||
        (node && asprintf(&field, "&fieldSelector=spec.nodeName%%3D%s", node) < 0))
        field = NULL;
    if (sel && asprintf(&path, "/api/v1/namespaces/%s/pods?labelSelector=%s%s", o->ns, sel,
                        field ? field : "") < 0)
        path = NULL;
    free(sel);
    free(node);
    free(field);
    if (!path)
        return NULL;
    cJSON *pods = fetch(k, path, 1, rights);
    free(path);
    if (!pods)
        return NULL;
    cJSON *running = cJSON_CreateArray();
    cJSON *p;
    while (running && (p = cJSON_DetachItemFromArray(pods, 0)) != NULL) {
        const char *phase = gs_yamljson_str(get(p, "status"), "phase");
        const char *on = gs_yamljson_str(get(p, "spec"), "nodeName");
        if (phase && !strcmp(phase, "Running") && on && (!o->node || !strcmp(on, o->node)))
            cJSON_AddItemToArray(running, p);
        else
            cJSON_Delete(p);
    }
    cJSON_Delete(pods);
    if (running && cJSON_GetArraySize(running) == 0) {
        fprintf(stderr,
                "kubectl gpuslice: no running Pod in namespace %s matches %s%s%s: is the agent "
                "deployed (deploy/README.md)?\n",
                o->ns, o->selector, o->node ? " on node " : "", o->node ? o->node : "");
        cJSON_Delete(running);
        return NULL;
    }
    return running;
}

static const char *pod_name(const cJSON *p)
{
    const char *n = gs_yamljson_str(get(p, "metadata"), "name");
    return n ? n : "?";
}

static const char *pod_node(const cJSON *p)
{
    const char *n = gs_yamljson_str(get(p, "spec"), "nodeName");
    return n ? n : "?";
}

/* The monitor's port in the Pod: --port, or the containerPort named "monitor". */
static int monitor_port(const struct opts *o, const cJSON *pod, char *out, size_t len)
{
    if (o->port) {
        snprintf(out, len, "%s", o->port);
        return 0;
    }
    const cJSON *c, *port;
    cJSON_ArrayForEach(c, get(get(pod, "spec"), "containers"))
    {
        cJSON_ArrayForEach(port, get(c, "ports"))
        {
            const char *name = gs_yamljson_str(port, "name");
            const cJSON *num = get(port, "containerPort");
            if (name && !strcmp(name, GS_K8S_MONITOR_PORT_NAME) && cJSON_IsNumber(num)) {
                snprintf(out, len, "%d", num->valueint);
                return 0;
            }
        }
    }
    fprintf(stderr,
            "kubectl gpuslice: Pod %s/%s has no containerPort named " GS_K8S_MONITOR_PORT_NAME
            " (the monitor's): give --port PORT, or --selector for the Pods the monitor runs "
            "in\n",
            o->ns, pod_name(pod));
    return -1;
}

/* ---- top ------------------------------------------------------------------------ */

struct top_row {
    char node[128], who[400], id[128], mem[80], compute[16], procs[16], state[16];
};

static int row_cmp(const void *a, const void *b)
{
    const struct top_row *x = a, *y = b;
    int c = strcmp(x->node, y->node);
    if (!c)
        c = strcmp(x->who, y->who);
    return c ? c : strcmp(x->id, y->id);
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = get(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static int cmd_top(struct opts *o, int argc, char **argv)
{
    if (argc) {
        fprintf(stderr, "kubectl gpuslice top: unexpected argument '%s'\n", argv[0]);
        return 2;
    }
    struct gs_kube k;
    if (open_kube(o, &k) < 0)
        return 1;
    cJSON *pods = agent_pods(o, &k, "list on pods and get on pods/proxy in the system namespace");
    if (!pods) {
        gs_kube_close(&k);
        return 1;
    }
    struct top_row *rows = NULL;
    size_t nrows = 0;
    int rc = 0;
    const cJSON *pod;
    cJSON_ArrayForEach(pod, pods)
    {
        char port[16], *path = NULL;
        if (monitor_port(o, pod, port, sizeof port) < 0) {
            rc = 1;
            continue;
        }
        if (asprintf(&path, "/api/v1/namespaces/%s/pods/%s:%s/proxy/api/slices", o->ns,
                     pod_name(pod), port) < 0) {
            rc = 1;
            break;
        }
        cJSON *doc = fetch(&k, path, 0, "get on pods/proxy in the system namespace");
        free(path);
        if (!doc) {
            fprintf(stderr, "kubectl gpuslice: node %s: the monitor in Pod %s did not answer\n",
                    pod_node(pod), pod_name(pod));
            rc = 1;
            continue;
        }
        const cJSON *s;
        int unknown_said = 0;
        cJSON_ArrayForEach(s, get(doc, "slices"))
        {
            const char *ns = gs_yamljson_str(s, "namespace"), *pn = gs_yamljson_str(s, "pod");
            const char *ctr = gs_yamljson_str(s, "container"), *id = gs_yamljson_str(s, "id");
            if (o->tenant_ns && (!ns || strcmp(ns, o->tenant_ns) != 0))
                continue;
            struct top_row *r = realloc(rows, (nrows + 1) * sizeof *r);
            if (!r) {
                rc = 1;
                break;
            }
            rows = r;
            r = &rows[nrows++];
            memset(r, 0, sizeof *r);
            snprintf(r->node, sizeof r->node, "%s", pod_node(pod));
            if (pn && *pn)
                snprintf(r->who, sizeof r->who, "%s/%s/%s", ns ? ns : "", pn, ctr ? ctr : "");
            else /* the monitor could not ask the kubelet (docs/monitor.md) */
                snprintf(r->who, sizeof r->who, "(Pod unknown)");
            snprintf(r->id, sizeof r->id, "%s", id ? id : "?");
            char used[32], cap[32];
            double capb = num(s, "memory_cap_bytes"), usedb = num(s, "used_bytes");
            gs_quantity_format_bytes((uint64_t)usedb, used, sizeof used);
            gs_quantity_format_bytes((uint64_t)capb, cap, sizeof cap);
            snprintf(r->mem, sizeof r->mem, "%s / %s (%.0f%%)", used, cap,
                     capb > 0 ? 100.0 * usedb / capb : 0.0);
            double pct = num(s, "compute_percent");
            if (pct > 0)
                snprintf(r->compute, sizeof r->compute, "%.0f%%", pct);
            else
                snprintf(r->compute, sizeof r->compute, "-");
            snprintf(r->procs, sizeof r->procs, "%.0f", num(s, "processes"));
            /* running, finished (its processes are gone), no-cuda (held, CUDA never
             * used: a CPU fallback); an older monitor gives only cuda_seen. */
            const char *state = gs_yamljson_str(s, "state");
            snprintf(r->state, sizeof r->state, "%s",
                     state                               ? state
                     : cJSON_IsTrue(get(s, "cuda_seen")) ? "running"
                                                         : "no-cuda");
            if ((!pn || !*pn) && !unknown_said) {
                const char *why = gs_yamljson_str(doc, "pods_unknown_reason");
                fprintf(stderr,
                        "kubectl gpuslice: node %s: the monitor does not know the Pods%s%s\n",
                        pod_node(pod), why && *why ? ": " : "", why && *why ? why : "");
                unknown_said = 1;
            }
        }
        cJSON_Delete(doc);
    }
    if (nrows) /* qsort wants an array, even of none */
        qsort(rows, nrows, sizeof *rows, row_cmp);
    printf("%-16s %-40s %-20s %-28s %-7s %-5s %s\n", "NODE", "NAMESPACE/POD/CONTAINER", "SLICE",
           "MEMORY USED / CAP", "COMPUTE", "PROCS", "STATE");
    for (size_t i = 0; i < nrows; i++)
        printf("%-16s %-40s %-20s %-28s %-7s %-5s %s\n", rows[i].node, rows[i].who, rows[i].id,
               rows[i].mem, rows[i].compute, rows[i].procs, rows[i].state);
    if (!nrows)
        printf("(no slices%s)\n", o->tenant_ns ? " in that namespace" : "");
    free(rows);
    cJSON_Delete(pods);
    gs_kube_close(&k);
    return rc;
}

/* ---- doctor --------------------------------------------------------------------- */

static int to_stdio(int stream, const char *buf, size_t len, void *ud)
{
    (void)ud;
    FILE *f = stream == 2 ? stderr : stdout;
    if (fwrite(buf, 1, len, f) != len)
        return -1;
    fflush(f);
    return 0;
}

static int append_arg(char **q, const char *arg)
{
    char *esc = gs_kube_escape(arg), *n = NULL;
    if (!esc || asprintf(&n, "%s&command=%s", *q, esc) < 0) {
        free(esc);
        return -1;
    }
    free(esc);
    free(*q);
    *q = n;
    return 0;
}

static int cmd_doctor(struct opts *o, int argc, char **argv)
{
    struct gs_kube k;
    if (open_kube(o, &k) < 0)
        return 1;
    const char *rights = "list on pods and create on pods/exec in the system namespace";
    cJSON *pods = agent_pods(o, &k, rights);
    if (!pods) {
        gs_kube_close(&k);
        return 1;
    }
    if (cJSON_GetArraySize(pods) > 1) {
        fprintf(stderr, "kubectl gpuslice doctor: the agent runs on several nodes (");
        const cJSON *p;
        int i = 0;
        cJSON_ArrayForEach(p, pods) fprintf(stderr, "%s%s", i++ ? ", " : "", pod_node(p));
        fprintf(stderr, "): give --node NODE\n");
        cJSON_Delete(pods);
        gs_kube_close(&k);
        return 2;
    }
    const cJSON *pod = cJSON_GetArrayItem(pods, 0);
    char *ctr = gs_kube_escape(o->container), *q = NULL;
    int rc = 1, exit_code = -1;
    if (ctr &&
        asprintf(&q, "/api/v1/namespaces/%s/pods/%s/exec?container=%s&stdout=true&stderr=true",
                 o->ns, pod_name(pod), ctr) < 0)
        q = NULL;
    free(ctr);
    /* The doctor in the agent's container sees the host at GS_K8S_HOST_ROOT. */
    const char *fixed[] = {"gpuslice",       "doctor", "--root",
                           GS_K8S_HOST_ROOT, "--node", pod_node(pod)};
    int ok = q != NULL;
    for (size_t i = 0; ok && i < sizeof fixed / sizeof fixed[0]; i++)
        ok = append_arg(&q, fixed[i]) == 0;
    for (int i = 0; ok && i < argc; i++)
        ok = append_arg(&q, argv[i]) == 0;
    if (ok) {
        gs_error err = {0};
        if (gs_kube_exec(&k, q, to_stdio, NULL, &exit_code, &err) < 0) {
            fprintf(stderr, "kubectl gpuslice doctor: node %s, Pod %s/%s: %s\n", pod_node(pod),
                    o->ns, pod_name(pod), err.msg);
            if (strstr(err.msg, "HTTP 401") || strstr(err.msg, "HTTP 403"))
                fprintf(stderr, "kubectl gpuslice: this needs %s (docs/cli.md)\n", rights);
            rc = 1;
        } else {
            rc = exit_code;
        }
    }
    free(q);
    cJSON_Delete(pods);
    gs_kube_close(&k);
    return rc;
}

/* ---- the verb ------------------------------------------------------------------- */

int gs_cmd_kubectl(int argc, char **argv)
{
    enum {
        O_KUBECONFIG = 256,
        O_CONTEXT,
        O_SYSNS,
        O_SELECTOR,
        O_PORT,
        O_CONTAINER,
        O_NODE,
        O_UNIT,
        O_COMPUTE,
        O_REALTIME
    };
    static const struct option longopts[] = {
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"context", required_argument, NULL, O_CONTEXT},
        {"system-namespace", required_argument, NULL, O_SYSNS},
        {"selector", required_argument, NULL, O_SELECTOR},
        {"port", required_argument, NULL, O_PORT},
        {"container", required_argument, NULL, O_CONTAINER},
        {"node", required_argument, NULL, O_NODE},
        {"unit", required_argument, NULL, O_UNIT},
        {"compute", required_argument, NULL, O_COMPUTE},
        {"realtime", no_argument, NULL, O_REALTIME},
        {"namespace", required_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    /* `kubectl gpuslice ...` runs kubectl-gpuslice with argv[0] = that name. */
    const char *prog =
        strstr(argv[0], "kubectl-gpuslice") ? "kubectl gpuslice" : "gpuslice kubectl";
    struct opts o = {.ns = GS_K8S_NAMESPACE,
                     .selector = GS_K8S_AGENT_SELECTOR,
                     .container = GS_K8S_AGENT_CONTAINER};
    const char *cmd = NULL;
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int nrest = 0, c;
    if (!rest)
        return 1;
    optind = 1;
    opterr = 0;
    /* Options may come before or after the command; "--" ends them (doctor's own follow). */
    while ((c = getopt_long(argc, argv, "-hn:", longopts, NULL)) != -1) {
        gs_error err = {0};
        switch (c) {
        case 1:
            if (!cmd)
                cmd = optarg;
            else
                rest[nrest++] = optarg;
            break;
        case O_KUBECONFIG: o.kubeconfig = optarg; break;
        case O_CONTEXT: o.context = optarg; break;
        case O_SYSNS: o.ns = optarg; break;
        case O_SELECTOR: o.selector = optarg; break;
        case O_PORT: o.port = optarg; break;
        case O_CONTAINER: o.container = optarg; break;
        case O_NODE: o.node = optarg; break;
        case O_UNIT: o.unit = optarg; break;
        case 'n': o.tenant_ns = optarg; break;
        case O_REALTIME: o.realtime = 1; break;
        case O_COMPUTE:
            if (gs_quantity_parse_percent(optarg, &o.compute, &err) < 0) {
                fprintf(stderr, "%s: --compute: %s\n", prog, err.msg);
                free(rest);
                return 2;
            }
            break;
        case 'h':
            usage(stdout, prog);
            free(rest);
            return 0;
        default:
            fprintf(stderr, "%s: unknown or incomplete option '%s'\n\n", prog, argv[optind - 1]);
            usage(stderr, prog);
            free(rest);
            return 2;
        }
    }
    for (int i = optind; i < argc; i++)
        rest[nrest++] = argv[i];
    int rc;
    if (!cmd) {
        usage(stderr, prog);
        rc = 2;
    } else if (!strcmp(cmd, "request")) {
        rc = cmd_request(&o, nrest, rest);
    } else if (!strcmp(cmd, "top")) {
        rc = cmd_top(&o, nrest, rest);
    } else if (!strcmp(cmd, "doctor")) {
        rc = cmd_doctor(&o, nrest, rest);
    } else if (!strcmp(cmd, "help")) {
        usage(stdout, prog);
        rc = 0;
    } else {
        fprintf(stderr, "%s: unknown command '%s': request, top or doctor\n\n", prog, cmd);
        usage(stderr, prog);
        rc = 2;
    }
    free(rest);
    return rc;
}
