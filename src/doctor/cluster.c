/* Cluster checks, read-only through the API server: the nvidia RuntimeClass,
 * this node's allocatable resources, Pods Pending for our resources (which
 * resource, how much is free on which node, why), Pods on this node that hold
 * a GPU resource without the RuntimeClass their runtime needs, and the events
 * that name the known failure patterns (the scheduler's "0/1 nodes are
 * available: 1 Insufficient ...", the kubelet's `RuntimeClass "nvidia" not
 * found` and containerd's `no runtime for "nvidia" is configured`;
 * docs/troubleshooting.md lists each). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/quantity.h"
#include "doctor/doctor.h"
#include "kube/kube.h"
#include "kube/yamljson.h"

static const char *const gpu_resources[] = {GS_RES_MEMORY_NAME, GS_RES_COMPUTE_NAME,
                                            GS_RES_REALTIME_NAME, GS_RES_NVIDIA_NAME};
#define NRES (sizeof gpu_resources / sizeof gpu_resources[0])

static const cJSON *get(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static const char *get_path_str(const cJSON *o, const char *a, const char *b)
{
    return gs_yamljson_str(get(o, a), b);
}

void gs_cluster_obj_name(const cJSON *obj, char *buf, size_t len)
{
    const cJSON *md = get(obj, "metadata");
    const char *ns = gs_yamljson_str(md, "namespace");
    const char *name = gs_yamljson_str(md, "name");
    snprintf(buf, len, "%s%s%s", ns ? ns : "", ns ? "/" : "", name ? name : "?");
}

static int quantity(const cJSON *v, uint64_t *out)
{
    if (cJSON_IsNumber(v) && v->valuedouble >= 0) {
        *out = (uint64_t)v->valuedouble;
        return 1;
    }
    return cJSON_IsString(v) && gs_quantity_parse_bytes(v->valuestring, out, NULL) == 0;
}

/* A container's request for res (its limit when no request is given). */
static int container_request(const cJSON *c, const char *res, uint64_t *out)
{
    const cJSON *r = get(c, "resources");
    return quantity(get(get(r, "requests"), res), out) || quantity(get(get(r, "limits"), res), out);
}

int gs_cluster_pod_request(const cJSON *pod, const char *res, uint64_t *out)
{
    const cJSON *spec = get(pod, "spec"), *c;
    uint64_t sum = 0, init = 0, v;
    int any = 0;
    cJSON_ArrayForEach(c, get(spec, "containers"))
    {
        if (container_request(c, res, &v)) {
            sum += v;
            any = 1;
        }
    }
    cJSON_ArrayForEach(c, get(spec, "initContainers"))
    {
        if (container_request(c, res, &v)) {
            init = v > init ? v : init;
            any = 1;
        }
    }
    *out = sum > init ? sum : init;
    return any;
}

int gs_cluster_pod_active(const cJSON *pod)
{
    const char *phase = get_path_str(pod, "status", "phase");
    return !phase || (strcmp(phase, "Succeeded") && strcmp(phase, "Failed"));
}

static int pod_wants_gpu(const cJSON *pod)
{
    uint64_t v;
    for (size_t i = 0; i < NRES; i++)
        if (gs_cluster_pod_request(pod, gpu_resources[i], &v) && v > 0)
            return 1;
    return 0;
}

/* "gpuslice.io/gpu-memory=8, gpuslice.io/gpu-compute=30" */
static void requests_text(const cJSON *pod, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < NRES; i++) {
        uint64_t v;
        if (!gs_cluster_pod_request(pod, gpu_resources[i], &v) || v == 0)
            continue;
        size_t l = strlen(buf);
        snprintf(buf + l, len - l, "%s%s=%llu", l ? ", " : "", gpu_resources[i],
                 (unsigned long long)v);
    }
}

static uint64_t node_alloc(const cJSON *node, const char *res, int *present)
{
    uint64_t v = 0;
    *present = quantity(get(get(get(node, "status"), "allocatable"), res), &v);
    return *present ? v : 0;
}

/* What Pods bound to node hold of res. */
static uint64_t node_used(const cJSON *pods, const char *node, const char *res)
{
    uint64_t used = 0, v;
    const cJSON *p;
    cJSON_ArrayForEach(p, pods)
    {
        const char *n = get_path_str(p, "spec", "nodeName");
        if (n && !strcmp(n, node) && gs_cluster_pod_active(p) && gs_cluster_pod_request(p, res, &v))
            used += v;
    }
    return used;
}

static const char *agent_fix =
    "Start the gpuslice agent on the GPU nodes: `kubectl -n gpuslice-system get ds,pods -o wide` "
    "(is one Running on each GPU node?), `kubectl -n gpuslice-system logs <pod>`; deploy it with "
    "`kubectl apply -k deploy/overlays/k3s-dgpu` (jetson, replica, cdi: deploy/README.md).";

static const char *runtimeclass_yaml = "kubectl apply -f - <<'EOF'\n"
                                       "apiVersion: node.k8s.io/v1\n"
                                       "kind: RuntimeClass\n"
                                       "metadata:\n"
                                       "  name: nvidia\n"
                                       "handler: nvidia\n"
                                       "EOF";

/* The newest event message for an object (kind/namespace/name) with the given reason. */
static const char *event_for(const cJSON *events, const char *kind, const char *ns,
                             const char *name, const char *reason)
{
    const char *best = NULL, *best_time = "";
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const cJSON *io = get(e, "involvedObject");
        const char *k = gs_yamljson_str(io, "kind"), *n = gs_yamljson_str(io, "name");
        const char *s = gs_yamljson_str(io, "namespace"), *r = gs_yamljson_str(e, "reason");
        if (!r || strcmp(r, reason) || (kind && (!k || strcmp(k, kind))) || !n || strcmp(n, name) ||
            (ns && (!s || strcmp(s, ns))))
            continue;
        const char *t = gs_yamljson_str(e, "lastTimestamp");
        if (!t)
            t = gs_yamljson_str(e, "eventTime");
        if (!t)
            t = "";
        if (!best || strcmp(t, best_time) >= 0) {
            best = gs_yamljson_str(e, "message");
            best_time = t;
        }
    }
    return best;
}

static void check_node(struct gs_doctor *d, const cJSON *nodes, const cJSON *pods)
{
    const cJSON *n;
    cJSON_ArrayForEach(n, nodes)
    {
        const char *name = get_path_str(n, "metadata", "name");
        if (name && !strcmp(name, d->node)) {
            d->this_node = cJSON_Duplicate(n, 1);
            break;
        }
    }
    if (!d->this_node) {
        char list[512] = "";
        cJSON_ArrayForEach(n, nodes)
        {
            size_t l = strlen(list);
            const char *name = get_path_str(n, "metadata", "name");
            snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", name ? name : "?");
        }
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_WARN, "cluster.node-missing",
            "node '%s' is not in the cluster: its allocatable was not checked", d->node);
        gs_finding_evidence(f, "nodes: %s", list[0] ? list : "(none)");
        gs_finding_fix(f, "Rerun with --node NAME (the name in `kubectl get nodes`), or join this "
                          "machine to the cluster.");
        return;
    }
    if (d->dra) {
        /* Claims, not node resources: the GPUs are in the driver's ResourceSlice. */
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_OK, "cluster.node-resources",
            "node %s runs gpuslice as a DRA driver: its GPUs are devices of a ResourceSlice, "
            "not node resources",
            d->node);
        gs_finding_evidence(f,
                            "the agent's node file says mode = dra; `kubectl get "
                            "resourceslices --field-selector spec.nodeName=%s` lists them",
                            d->node);
        return;
    }
    char have[512] = "";
    int any = 0, listed = 0;
    for (size_t i = 0; i < NRES; i++) {
        int present;
        uint64_t v = node_alloc(d->this_node, gpu_resources[i], &present);
        if (!present)
            continue;
        listed = 1;
        any = any || v > 0;
        size_t l = strlen(have);
        snprintf(have + l, sizeof have - l, "%s%s=%llu (%llu free)", l ? ", " : "",
                 gpu_resources[i], (unsigned long long)v,
                 (unsigned long long)(v - (node_used(pods, d->node, gpu_resources[i]) > v
                                               ? v
                                               : node_used(pods, d->node, gpu_resources[i]))));
    }
    if (any) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_OK, "cluster.node-resources",
                                             "node %s advertises GPU resources", d->node);
        gs_finding_evidence(f, "allocatable: %s", have);
        return;
    }
    struct gs_finding *f = gs_report_add(
        d->rep, GS_SEV_ERROR, "cluster.node-no-resources",
        "node %s advertises no gpuslice resources: Pods asking for them stay Pending", d->node);
    gs_finding_evidence(f, "status.allocatable of node %s: %s", d->node,
                        listed ? have : "no gpuslice.io/* or nvidia.com/gpu at all");
    if (d->plugin_socket == 0)
        gs_finding_fix(f, "%s", agent_fix);
    else if (d->plugin_socket < 0)
        gs_finding_fix(f,
                       "The agent died and left its socket behind: `kubectl -n gpuslice-system "
                       "delete pod -l app.kubernetes.io/name=gpuslice-agent "
                       "--field-selector spec.nodeName=%s` (the DaemonSet starts a new one).",
                       d->node);
    else if (listed)
        gs_finding_fix(f, "The agent is registered but reports every device unhealthy (0 "
                          "allocatable): read its log, `kubectl -n gpuslice-system logs -l "
                          "app.kubernetes.io/name=gpuslice-agent`, and the node checks above.");
    else
        gs_finding_fix(f, "The agent's socket exists but the kubelet lists nothing: the kubelet "
                          "restarted and the agent did not register again. Restart the agent: "
                          "`kubectl -n gpuslice-system rollout restart ds/gpuslice-agent`.");
}

/* Why a Pending Pod cannot fit, resource by resource, and the fix. */
static void explain_pending(struct gs_doctor *d, struct gs_finding *f, const cJSON *pod,
                            const cJSON *nodes, const cJSON *pods)
{
    int fixed = 0;
    for (size_t i = 0; i < NRES; i++) {
        const char *res = gpu_resources[i];
        uint64_t want;
        if (!gs_cluster_pod_request(pod, res, &want) || want == 0)
            continue;
        uint64_t best_free = 0, best_alloc = 0;
        const char *best_node = NULL, *big_node = NULL;
        char frees[512] = "";
        int advertised = 0;
        const cJSON *n;
        cJSON_ArrayForEach(n, nodes)
        {
            const char *name = get_path_str(n, "metadata", "name");
            int present;
            uint64_t alloc = node_alloc(n, res, &present);
            if (!name || !present)
                continue;
            advertised = 1;
            uint64_t used = node_used(pods, name, res);
            uint64_t free_ = used > alloc ? 0 : alloc - used;
            size_t l = strlen(frees);
            snprintf(frees + l, sizeof frees - l, "%s%s: %llu free of %llu", l ? ", " : "", name,
                     (unsigned long long)free_, (unsigned long long)alloc);
            if (!best_node || free_ > best_free) {
                best_free = free_;
                best_node = name;
            }
            if (!big_node || alloc > best_alloc) {
                best_alloc = alloc;
                big_node = name;
            }
        }
        gs_finding_evidence(f, "%s: asks %llu; %s", res, (unsigned long long)want,
                            advertised ? frees : "no node advertises it");
        if (fixed)
            continue;
        if (!advertised) {
            gs_finding_fix(f,
                           "No node advertises %s: the gpuslice agent is not running or not "
                           "registered. %s",
                           res, agent_fix);
            fixed = 1;
        } else if (want > best_alloc) {
            gs_finding_fix(f,
                           "The Pod asks for %llu %s, more than any node has (largest: %llu on "
                           "%s): lower the request in the Pod spec.",
                           (unsigned long long)want, res, (unsigned long long)best_alloc, big_node);
            fixed = 1;
        } else if (want > best_free) {
            gs_finding_fix(f,
                           "The GPUs are full: at most %llu %s is free (on %s). Delete or "
                           "scale down a Pod holding %s (`kubectl get pods -A -o wide`), or "
                           "lower this Pod's request.",
                           (unsigned long long)best_free, res, best_node, res);
            fixed = 1;
        }
    }
    if (!fixed)
        gs_finding_fix(f, "Enough GPU resources are free now; the scheduler retries by itself. If "
                          "the Pod stays Pending, the event message above names the other "
                          "constraint (node selector, taint, CPU or memory).");
    (void)d;
}

/* NVIDIA's device plugin running on this node (its image, whichever chart or
 * operator put it there): beside gpuslice it hands out the GPUs gpuslice
 * slices (fractional mode), or fights over the socket gpuslice serves
 * nvidia.com/gpu on (replica mode: the two replace each other's registration,
 * which the node alone cannot see). */
static void check_nvidia_plugin_pod(struct gs_doctor *d, const cJSON *pods)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, pods)
    {
        const char *node = get_path_str(p, "spec", "nodeName");
        if (!node || strcmp(node, d->node) || !gs_cluster_pod_active(p))
            continue;
        const cJSON *c;
        cJSON_ArrayForEach(c, get(get(p, "spec"), "containers"))
        {
            const char *image = gs_yamljson_str(c, "image");
            if (!image || !strstr(image, "k8s-device-plugin"))
                continue;
            char name[300];
            gs_cluster_obj_name(p, name, sizeof name);
            struct gs_finding *f = gs_report_add(
                d->rep, GS_SEV_WARN, "cluster.nvidia-plugin-pod",
                "NVIDIA's device plugin runs on node %s beside gpuslice: both hand out its GPUs",
                d->node);
            gs_finding_evidence(f, "Pod %s on %s, image %s", name, d->node, image);
            gs_finding_fix(f,
                           "Keep NVIDIA's plugin off this node (GPU Operator: `kubectl label node "
                           "%s nvidia.com/gpu.deploy.device-plugin=false`; its Helm chart: a node "
                           "affinity on " GS_LABEL_GPU
                           " DoesNotExist); Pods asking for " GS_RES_NVIDIA_NAME
                           " get it from gpuslice's replica mode "
                           "(deploy/overlays/replica). deploy/README.md, \"Next to NVIDIA's "
                           "device plugin\".",
                           d->node);
            return;
        }
    }
}

static void check_pods(struct gs_doctor *d, const cJSON *nodes, const cJSON *pods,
                       const cJSON *events, int class_exists)
{
    const cJSON *p;
    int needs = gs_doctor_needs_runtimeclass(d);
    size_t gpu_pods = 0;
    cJSON_ArrayForEach(p, pods)
    {
        if (!pod_wants_gpu(p) || !gs_cluster_pod_active(p))
            continue;
        gpu_pods++;
        char name[300], req[256];
        gs_cluster_obj_name(p, name, sizeof name);
        requests_text(p, req, sizeof req);
        const char *ns = get_path_str(p, "metadata", "namespace");
        const char *pname = get_path_str(p, "metadata", "name");
        const char *node = get_path_str(p, "spec", "nodeName");
        const char *phase = get_path_str(p, "status", "phase");
        const char *rc = get_path_str(p, "spec", "runtimeClassName");
        if (!node && phase && !strcmp(phase, "Pending") && pname) {
            const char *why = event_for(events, "Pod", ns, pname, "FailedScheduling");
            const cJSON *cond;
            cJSON_ArrayForEach(cond, get(get(p, "status"), "conditions"))
            {
                const char *t = gs_yamljson_str(cond, "type");
                if (!why && t && !strcmp(t, "PodScheduled"))
                    why = gs_yamljson_str(cond, "message");
            }
            const char *ins = why ? strstr(why, "Insufficient ") : NULL;
            char what[128] = "";
            if (ins) { /* up to ". " or "," (resource names have dots of their own) */
                size_t n = 0;
                while (ins[n] && ins[n] != ',' &&
                       !(ins[n] == '.' && (ins[n + 1] == ' ' || ins[n + 1] == '\0')))
                    n++;
                snprintf(what, sizeof what, ": %.*s", (int)(n < 100 ? n : 100), ins);
            }
            struct gs_finding *f = gs_report_add(d->rep, GS_SEV_ERROR, "cluster.pod-pending",
                                                 "Pod %s is Pending%s", name, what);
            gs_finding_evidence(f, "requests %s", req);
            if (why)
                gs_finding_evidence(f, "FailedScheduling: %s", why);
            explain_pending(d, f, p, nodes, pods);
            continue;
        }
        if (!node || strcmp(node, d->node) || (rc && *rc))
            continue;
        if (!needs)
            continue;
        struct gs_finding *f = gs_report_add(
            d->rep, d->runtime_found ? GS_SEV_ERROR : GS_SEV_WARN, "cluster.pod-no-runtimeclass",
            "Pod %s holds a GPU slice but has no runtimeClassName: it runs under runc, the GPU is "
            "never mounted and the app falls back to the CPU",
            name);
        gs_finding_evidence(f, "requests %s on node %s; spec.runtimeClassName is not set", req,
                            d->node);
        if (d->runtime_found)
            gs_finding_evidence(f, "this node's default runtime is not nvidia and %s",
                                d->cdi_enabled ? "no CDI spec names the GPU" : "CDI is off");
        else
            gs_finding_evidence(f, "this node's runtime configuration was not found: check it");
        gs_finding_fix(f,
                       "Add `runtimeClassName: nvidia` to the Pod spec (for a Deployment: "
                       "spec.template.spec.runtimeClassName) and recreate the Pod%s; or make "
                       "nvidia the node's default runtime (see runtime.default-not-nvidia).",
                       class_exists ? ""
                                    : ", after creating the RuntimeClass (see "
                                      "cluster.runtimeclass-missing)");
        const char *ev =
            pname ? event_for(events, "Pod", ns, pname, "FailedCreatePodSandBox") : NULL;
        if (ev)
            gs_finding_evidence(f, "FailedCreatePodSandBox: %s", ev);
    }
    /* the kubelet could not start a sandbox: the handler is missing on the node */
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const char *r = gs_yamljson_str(e, "reason"), *m = gs_yamljson_str(e, "message");
        const char *host = get_path_str(e, "source", "host");
        if (!r || !m || strcmp(r, "FailedCreatePodSandBox") || !strstr(m, "no runtime for") ||
            (host && strcmp(host, d->node)))
            continue;
        char obj[300];
        gs_cluster_obj_name(get(e, "involvedObject"), obj, sizeof obj);
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "cluster.sandbox-no-handler",
                          "Pod %s cannot start: the runtime handler it asks for is not "
                          "configured on this node",
                          obj);
        gs_finding_evidence(f, "FailedCreatePodSandBox: %s", m);
        gs_finding_fix(f, "Configure the handler in this node's containerd (see "
                          "runtime.nvidia-handler-missing / runtime.nvidia-config-wrong-file "
                          "above), then delete the Pod so it is created again.");
    }
    if (gpu_pods == 0)
        gs_report_add(d->rep, GS_SEV_INFO, "cluster.no-gpu-pods", "no Pod asks for GPU resources");
}

static void check_runtimeclass(struct gs_doctor *d, const cJSON *classes, const cJSON *events,
                               int *exists)
{
    const cJSON *c, *found = NULL;
    cJSON_ArrayForEach(c, classes)
    {
        const char *n = get_path_str(c, "metadata", "name");
        if (n && !strcmp(n, GS_RUNTIME_CLASS))
            found = c;
    }
    *exists = found != NULL;
    /* the API server's rejection, seen on the ReplicaSet/DaemonSet/Job that tried */
    const char *rejected = NULL;
    char by[300] = "";
    cJSON_ArrayForEach(c, events)
    {
        const char *m = gs_yamljson_str(c, "message");
        if (m && strstr(m, "RuntimeClass \"" GS_RUNTIME_CLASS "\" not found")) {
            rejected = m;
            gs_cluster_obj_name(get(c, "involvedObject"), by, sizeof by);
        }
    }
    if (found) {
        const char *h = gs_yamljson_str(found, "handler");
        char list[sizeof d->handlers + 2], needle[160];
        snprintf(list, sizeof list, ",%s,", d->handlers);
        snprintf(needle, sizeof needle, ",%s,", h ? h : "");
        if (d->runtime_found && h && !strstr(list, needle)) {
            struct gs_finding *f = gs_report_add(
                d->rep, GS_SEV_ERROR, "cluster.runtimeclass-handler-missing",
                "RuntimeClass nvidia uses handler \"%s\", which this node's containerd does not "
                "have: Pods using it fail with 'no runtime for \"%s\" is configured'",
                h, h);
            gs_finding_evidence(f, "RuntimeClass nvidia: handler %s; nvidia handlers on %s: %s", h,
                                d->node, d->handlers[0] ? d->handlers : "none");
            gs_finding_fix(f,
                           "Configure the handler on this node (see the runtime findings), or "
                           "point the RuntimeClass at one it has: `kubectl delete "
                           "runtimeclass nvidia` and\n%s",
                           runtimeclass_yaml);
        } else {
            gs_report_add(d->rep, GS_SEV_OK, "cluster.runtimeclass",
                          "RuntimeClass nvidia exists (handler %s)", h ? h : "?");
        }
        return;
    }
    int needed = gs_doctor_needs_runtimeclass(d) || rejected;
    struct gs_finding *f = gs_report_add(
        d->rep, needed ? GS_SEV_ERROR : GS_SEV_INFO, "cluster.runtimeclass-missing",
        needed ? "RuntimeClass nvidia does not exist: Pods that name it are rejected, Pods that "
                 "leave it out get the GPU resource but never the device"
               : "RuntimeClass nvidia does not exist (not needed here: the node's default "
                 "runtime or CDI injects the GPU)");
    gs_finding_evidence(f, "GET /apis/node.k8s.io/v1/runtimeclasses has no \"nvidia\"");
    if (rejected)
        gs_finding_evidence(f, "%s: %s", by, rejected);
    if (d->runtime_found && needed)
        gs_finding_evidence(f, "node %s: default runtime is not nvidia and %s", d->node,
                            d->cdi_enabled ? "no CDI spec names the GPU" : "CDI is off");
    gs_finding_fix(f,
                   "Create it (K3s creates it at server start since v1.29; it was removed or "
                   "the server is older):\n%s",
                   runtimeclass_yaml);
}

static void report_api_error(struct gs_doctor *d, const struct gs_kube *k, const char *what,
                             long status, const gs_error *err)
{
    if (status == 401 || status == 403) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_WARN, "cluster.forbidden",
                          "the API server refused to list %s: those checks did not run", what);
        gs_finding_evidence(f, "%s", err->msg);
        gs_finding_evidence(f, "credentials: %s", k->origin);
        gs_finding_fix(f, "%s",
                       status == 401 ? "The token or client certificate is not accepted: renew the "
                                       "kubeconfig (K3s: /etc/rancher/k3s/k3s.yaml)."
                                     : "Grant read access: a ClusterRole with verbs get, list on "
                                       "nodes, pods, events and runtimeclasses.node.k8s.io, bound "
                                       "to this user or service account.");
        return;
    }
    struct gs_finding *f =
        gs_report_add(d->rep, GS_SEV_WARN, "cluster.unreachable",
                      "the API server could not be read: the cluster checks did not run");
    gs_finding_evidence(f, "%s", err->msg);
    gs_finding_evidence(f, "credentials: %s", k->origin);
    gs_finding_fix(f, "Check the server address and CA in the kubeconfig (`kubectl get nodes` "
                      "with the same file), or rerun with --skip-cluster.");
}

void gs_cluster_check(struct gs_doctor *d)
{
    if (d->skip_cluster) {
        gs_report_add(d->rep, GS_SEV_INFO, "cluster.skipped",
                      "cluster checks skipped: --skip-cluster");
        return;
    }
    struct gs_kube k;
    gs_error err = {0};
    struct gs_kube_opts ko = {
        .kubeconfig = d->kubeconfig, .root = d->root, .agent = "gpuslice-doctor"};
    int rc = gs_kube_open(&k, &ko, &err);
    if (rc == GS_ENOENT) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_INFO, "cluster.skipped",
                                             "cluster checks skipped: no API server credentials");
        gs_finding_evidence(f, "%s", err.msg);
        gs_finding_fix(f, "Give one: --kubeconfig /etc/rancher/k3s/k3s.yaml (K3s), or "
                          "--kubeconfig ~/.kube/config.");
        return;
    }
    if (rc < 0) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_WARN, "cluster.kubeconfig-invalid",
                          "the kubeconfig cannot be used: the cluster checks did not run");
        gs_finding_evidence(f, "%s", err.msg);
        gs_finding_fix(f, "Fix the kubeconfig (`kubectl --kubeconfig FILE get nodes` must work) "
                          "or rerun with --skip-cluster.");
        return;
    }
    if (k.insecure) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_WARN, "cluster.tls-unverified",
                                             "the kubeconfig turns TLS verification off");
        gs_finding_evidence(f, "%s: insecure-skip-tls-verify: true", k.origin);
        gs_finding_fix(f, "Put the cluster's CA in certificate-authority-data instead.");
    }
    cJSON *nodes = NULL, *pods = NULL, *classes = NULL, *events = NULL;
    long status = 0;
    if (gs_kube_list(&k, "/api/v1/nodes", &nodes, &status, &err) < 0) {
        report_api_error(d, &k, "nodes", status, &err);
        gs_kube_close(&k);
        return;
    }
    if (gs_kube_list(&k, "/api/v1/pods", &pods, &status, &err) < 0) {
        report_api_error(d, &k, "pods", status, &err);
        pods = cJSON_CreateArray();
    }
    if (gs_kube_list(&k, "/apis/node.k8s.io/v1/runtimeclasses", &classes, &status, &err) < 0) {
        if (status != 404) /* 404: a cluster too old for node.k8s.io/v1 */
            report_api_error(d, &k, "runtimeclasses", status, &err);
        classes = NULL;
    }
    if (gs_kube_list(&k, "/api/v1/events", &events, &status, &err) < 0) {
        report_api_error(d, &k, "events", status, &err);
        events = cJSON_CreateArray();
    }
    struct gs_finding *f =
        gs_report_add(d->rep, GS_SEV_OK, "cluster.reachable", "API server read: %d nodes, %d pods",
                      cJSON_GetArraySize(nodes), cJSON_GetArraySize(pods));
    gs_finding_evidence(f, "%s", k.origin);
    gs_kube_close(&k);
    check_node(d, nodes, pods);
    check_nvidia_plugin_pod(d, pods);
    int class_exists = 1;
    if (classes)
        check_runtimeclass(d, classes, events, &class_exists);
    check_pods(d, nodes, pods, events, class_exists);
    d->pods = pods;
    cJSON_Delete(nodes);
    cJSON_Delete(classes);
    cJSON_Delete(events);
}

void gs_cluster_free(struct gs_doctor *d)
{
    cJSON_Delete(d->pods);
    cJSON_Delete(d->this_node);
    d->pods = NULL;
    d->this_node = NULL;
}
