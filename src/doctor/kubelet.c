/* Kubelet checks: the device-plugin directory holds the kubelet's
 * registration socket and ours, and someone is listening on ours (a plugin
 * that died leaves its socket file behind; the kubelet then shows the
 * resource with 0 allocatable and Pods stay Pending). The PodResources socket
 * is what the monitor reads to join Pods to slices. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "contract/nodefile.h"
#include "doctor/doctor.h"

enum sock_state { SOCK_MISSING, SOCK_NOT_SOCKET, SOCK_DEAD, SOCK_ALIVE, SOCK_UNTESTED };

static enum sock_state probe(const char *path, char *why, size_t len)
{
    struct stat st;
    why[0] = '\0';
    if (lstat(path, &st) != 0)
        return SOCK_MISSING;
    if (!S_ISSOCK(st.st_mode))
        return SOCK_NOT_SOCKET;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(why, len, "path too long to connect to");
        return SOCK_UNTESTED;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, len, "socket(): %s", strerror(errno));
        return SOCK_UNTESTED;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    close(fd);
    if (rc == 0)
        return SOCK_ALIVE;
    snprintf(why, len, "connect: %s", strerror(e));
    if (e == ECONNREFUSED || e == ENOENT)
        return SOCK_DEAD;
    return SOCK_UNTESTED; /* EACCES when not root: exists, cannot tell more */
}

static const char *agent_fix =
    "Start the gpuslice agent on this node: `kubectl -n gpuslice-system get pods -o wide "
    "-l app.kubernetes.io/name=gpuslice-agent` (is one Running here?), "
    "`kubectl -n gpuslice-system logs <pod>`; deploy it with `kubectl apply -k "
    "deploy/overlays/k3s-dgpu` (jetson, replica, cdi: deploy/README.md).";

void gs_kubelet_check(struct gs_doctor *d)
{
    char dir[PATH_MAX], p[PATH_MAX], why[128];
    snprintf(dir, sizeof dir, "%s/" GS_KUBELET_PLUGIN_SUBDIR, d->kubelet_dir);
    char abs[PATH_MAX + 32];

    snprintf(abs, sizeof abs, "%s/" GS_KUBELET_SOCKET, dir);
    enum sock_state ks =
        gs_doctor_path(d, abs, p, sizeof p) ? SOCK_MISSING : probe(p, why, sizeof why);
    if (ks == SOCK_MISSING || ks == SOCK_NOT_SOCKET || ks == SOCK_DEAD) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "kubelet.socket-missing",
                          "the kubelet's device-plugin socket is %s: no device plugin can register",
                          ks == SOCK_DEAD ? "dead" : "missing");
        gs_finding_evidence(f, "%s: %s%s", abs,
                            ks == SOCK_MISSING      ? "does not exist"
                            : ks == SOCK_NOT_SOCKET ? "is not a socket"
                                                    : "nobody listens",
                            why[0] ? why : "");
        gs_finding_fix(f,
                       "Is the kubelet (K3s) running? `sudo systemctl status k3s` (k3s-agent on "
                       "agents). If the kubelet uses another root dir (--kubelet-arg=root-dir=), "
                       "rerun with --kubelet-dir DIR.");
    } else {
        gs_report_add(d->rep, GS_SEV_OK, "kubelet.socket", "kubelet device-plugin socket present");
    }

    /* Which sockets the agent serves: its node file says (mode and one socket
     * per resource); without one, the fractional mode's memory socket. */
    struct gs_nodefile nf;
    gs_error nerr = {0};
    int have_nf = gs_nodefile_load(d->state_dir, &nf, &nerr) == GS_OK && nf.nres > 0;
    if (!have_nf) {
        memset(&nf, 0, sizeof nf);
        nf.nres = 1;
        snprintf(nf.res[0].name, sizeof nf.res[0].name, "%s", GS_RES_MEMORY_NAME);
        snprintf(nf.res[0].socket, sizeof nf.res[0].socket, "%s", GS_SOCK_MEMORY);
    }
    /* A DRA driver registers through the kubelet's plugin watcher instead:
     * its registration socket in plugins_registry/, and no node resources. */
    d->dra = have_nf && nf.dra;
    const char *what = d->dra ? "DRA driver" : "device plugin";
    char sdir[PATH_MAX];
    snprintf(sdir, sizeof sdir, "%s/%s", d->kubelet_dir,
             d->dra ? GS_KUBELET_REGISTRY_SUBDIR : GS_KUBELET_PLUGIN_SUBDIR);
    d->plugin_socket = 1;
    for (int i = 0; i < nf.nres; i++) {
        if (!nf.res[i].socket[0])
            continue;
        snprintf(abs, sizeof abs, "%s/%s", sdir, nf.res[i].socket);
        why[0] = '\0';
        enum sock_state ps =
            gs_doctor_path(d, abs, p, sizeof p) ? SOCK_MISSING : probe(p, why, sizeof why);
        if (ps == SOCK_MISSING || ps == SOCK_NOT_SOCKET) {
            d->plugin_socket = 0;
            struct gs_finding *f =
                gs_report_add(d->rep, GS_SEV_ERROR, "kubelet.plugin-socket-missing",
                              "the gpuslice %s is not registered here for %s: Pods asking for it "
                              "stay Pending (%s %s)",
                              what, nf.res[i].name, d->dra ? "no device of driver" : "Insufficient",
                              nf.res[i].name);
            gs_finding_evidence(
                f, "%s %s%s", abs, ps == SOCK_MISSING ? "does not exist" : "is not a socket",
                have_nf ? "" : " (no agent node file: the fractional mode's socket)");
            gs_finding_fix(f, "%s", agent_fix);
        } else if (ps == SOCK_DEAD) {
            if (d->plugin_socket > 0)
                d->plugin_socket = -1;
            struct gs_finding *f =
                gs_report_add(d->rep, GS_SEV_ERROR, "kubelet.plugin-socket-stale",
                              "the gpuslice %s socket for %s exists but nobody listens: the "
                              "agent died and the kubelet counts its devices as gone",
                              what, nf.res[i].name);
            gs_finding_evidence(f, "%s: %s", abs, why);
            gs_finding_fix(f, "%s", agent_fix);
        } else {
            struct gs_finding *f = gs_report_add(
                d->rep, GS_SEV_OK, "kubelet.plugin-socket", "gpuslice %s socket for %s present%s",
                what, nf.res[i].name, ps == SOCK_ALIVE ? " and listening" : "");
            gs_finding_evidence(f, "%s%s%s", abs, why[0] ? ": " : "", why);
        }
    }

    /* NVIDIA's plugin advertises every GPU of the node as nvidia.com/gpu: beside
     * gpuslice's slices of the same GPUs, a Pod asking for it gets a whole GPU
     * that slices also hold, and the scheduler counts that memory twice. In
     * replica mode that file name is ours (GS_SOCK_REPLICA): the two plugins
     * would replace each other's socket, which only the cluster can tell
     * (cluster.nvidia-plugin-pod). */
    snprintf(abs, sizeof abs, "%s/" GS_SOCK_NVIDIA_PLUGIN, dir);
    if (!(have_nf && nf.replica) && gs_doctor_exists(d, abs)) {
        enum sock_state ns =
            gs_doctor_path(d, abs, p, sizeof p) ? SOCK_MISSING : probe(p, why, sizeof why);
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_WARN, "kubelet.nvidia-plugin-present",
            "NVIDIA's device plugin is registered beside gpuslice: it hands out the same GPUs "
            "whole as " GS_RES_NVIDIA_NAME ", unsliced and unenforced");
        gs_finding_evidence(f, "%s exists%s (NVIDIA's plugin's socket name)", abs,
                            ns == SOCK_ALIVE  ? " and someone listens"
                            : ns == SOCK_DEAD ? ", nobody listens (a stale file)"
                                              : "");
        gs_finding_fix(f,
                       "One of the two per node (deploy/README.md, \"Next to NVIDIA's device "
                       "plugin\"): keep NVIDIA's plugin off this node (GPU Operator: `kubectl "
                       "label node %s nvidia.com/gpu.deploy.device-plugin=false`; its Helm "
                       "chart: a node affinity on " GS_LABEL_GPU " DoesNotExist), or, for Pods "
                       "that ask for " GS_RES_NVIDIA_NAME ", replace it with gpuslice's replica "
                       "mode (`kubectl apply -k deploy/overlays/replica`).",
                       d->node);
    }

    snprintf(abs, sizeof abs, "%s/" GS_PODRES_SOCKET_SUBPATH, d->kubelet_dir);
    enum sock_state rs =
        gs_doctor_path(d, abs, p, sizeof p) ? SOCK_MISSING : probe(p, why, sizeof why);
    if (rs == SOCK_MISSING || rs == SOCK_NOT_SOCKET || rs == SOCK_DEAD) {
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_WARN, "kubelet.podresources-missing",
            "the kubelet's PodResources socket is missing: the monitor cannot name the Pod of "
            "each slice");
        gs_finding_evidence(f, "%s: %s", abs,
                            rs == SOCK_MISSING ? "does not exist"
                            : rs == SOCK_DEAD  ? "nobody listens"
                                               : "is not a socket");
        gs_finding_fix(f,
                       "It is on by default since Kubernetes 1.15; check that the agent "
                       "mounts %s/pod-resources and that the kubelet runs.",
                       d->kubelet_dir);
    } else {
        gs_report_add(d->rep, GS_SEV_OK, "kubelet.podresources", "PodResources socket present");
    }
}
