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
    "`kubectl -n gpuslice-system logs <pod>`; deploy it with `kubectl apply -f "
    "deploy/gpuslice-agent.yaml` (a DaemonSet with runtimeClassName: nvidia).";

void gs_kubelet_check(struct gs_doctor *d)
{
    char dir[PATH_MAX], p[PATH_MAX], why[128];
    snprintf(dir, sizeof dir, "%s/device-plugins", d->kubelet_dir);
    char abs[PATH_MAX + 32];

    snprintf(abs, sizeof abs, "%s/kubelet.sock", dir);
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

    snprintf(abs, sizeof abs, "%s/gpuslice.sock", dir);
    enum sock_state ps =
        gs_doctor_path(d, abs, p, sizeof p) ? SOCK_MISSING : probe(p, why, sizeof why);
    d->plugin_socket = ps == SOCK_ALIVE || ps == SOCK_UNTESTED ? 1 : ps == SOCK_DEAD ? -1 : 0;
    if (ps == SOCK_MISSING || ps == SOCK_NOT_SOCKET) {
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_ERROR, "kubelet.plugin-socket-missing",
            "the gpuslice device plugin is not registered here: Pods asking for gpuslice.io/* "
            "stay Pending (Insufficient gpuslice.io/gpu-memory)");
        gs_finding_evidence(f, "%s %s", abs,
                            ps == SOCK_MISSING ? "does not exist" : "is not a socket");
        gs_finding_fix(f, "%s", agent_fix);
    } else if (ps == SOCK_DEAD) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "kubelet.plugin-socket-stale",
                          "the gpuslice plugin socket exists but nobody listens: the agent died "
                          "and the kubelet counts its devices as gone");
        gs_finding_evidence(f, "%s: %s", abs, why);
        gs_finding_fix(f, "%s", agent_fix);
    } else {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_OK, "kubelet.plugin-socket",
                                             "gpuslice plugin socket present%s",
                                             ps == SOCK_ALIVE ? " and listening" : "");
        if (why[0])
            gs_finding_evidence(f, "%s: %s", abs, why);
    }

    snprintf(abs, sizeof abs, "%s/device-plugins/nvidia-gpu.sock", d->kubelet_dir);
    if (gs_doctor_exists(d, abs)) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_INFO, "kubelet.nvidia-plugin-present",
                          "NVIDIA's device plugin is also registered on this node");
        gs_finding_evidence(f, "%s exists", abs);
        gs_finding_fix(f, "Fine in fractional mode. In replica mode gpuslice advertises "
                          "nvidia.com/gpu itself and the two plugins overwrite each other: "
                          "remove NVIDIA's plugin from this node.");
    }

    snprintf(abs, sizeof abs, "%s/pod-resources/kubelet.sock", d->kubelet_dir);
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
