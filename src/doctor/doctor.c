/* `gpuslice doctor`: options, the helpers every check group uses, and the
 * order of the checks (node facts first: the later groups depend on them). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract/limits.h"
#include "node/mps.h"
#include "common/log.h"
#include "contract/slice.h"
#include "doctor/doctor.h"

int gs_cmd_doctor(int argc, char **argv);

int gs_doctor_path(const struct gs_doctor *d, const char *abs, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s%s%s", d->root, abs[0] == '/' ? "" : "/", abs);
    if (n < 0 || (size_t)n >= len) {
        if (len)
            buf[0] = '\0';
        return GS_ERANGE;
    }
    return 0;
}

int gs_doctor_exists(const struct gs_doctor *d, const char *abs)
{
    char p[PATH_MAX];
    struct stat st;
    return gs_doctor_path(d, abs, p, sizeof p) == 0 && stat(p, &st) == 0;
}

const char *gs_doctor_shown(const struct gs_doctor *d, const char *path)
{
    size_t rl = strlen(d->root);
    return strncmp(path, d->root, rl) == 0 ? path + rl : path;
}

int gs_doctor_needs_runtimeclass(const struct gs_doctor *d)
{
    if (d->default_nvidia)
        return 0;
    return !(d->cdi_enabled && d->cdi_nvidia_spec);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: gpuslice doctor [options]\n"
                 "Checks this node (and the cluster, when the API server is reachable) for the\n"
                 "known GPU traps and prints each finding with its evidence and exact fix.\n\n"
                 "  --root DIR        inspect a node image or fixture at DIR instead of /\n"
                 "  --node NAME       this node's name in the cluster (default: $NODE_NAME,\n"
                 "                    then the host name)\n"
                 "  --kubeconfig FILE API server credentials (default: $KUBECONFIG, then the\n"
                 "                    in-cluster service account, then K3s's k3s.yaml)\n"
                 "  --skip-cluster    do not contact the API server\n"
                 "  --state-dir DIR   slice state root (default <root>" GS_STATE_ROOT_DEFAULT ")\n"
                 "  --kubelet-dir DIR kubelet root dir (default " GS_KUBELET_DIR_DEFAULT
                 ", under --root)\n"
                 "  --grace SECONDS   a slice younger than this may not have used CUDA yet (300)\n"
                 "  --mps-pipe-dir D  the MPS daemon's pipe directory, for slices set to MPS\n"
                 "                    (default: the agent's mps_pipe_dir from its node file, else\n"
                 "                    <root>/tmp/nvidia-mps)\n"
                 "  --json            print the findings as JSON\n"
                 "  -h, --help        this text\n\n"
                 "Exit status: 0 healthy, 1 something is wrong (an error finding), 2 usage error.\n"
                 "docs/troubleshooting.md explains every finding id.\n");
}

static int set_str(char *dst, size_t len, const char *val, const char *what)
{
    size_t n = strlen(val);
    if (n >= len) {
        fprintf(stderr, "gpuslice doctor: %s '%.80s...' is too long (at most %zu bytes)\n", what,
                val, len - 1);
        return -1;
    }
    memcpy(dst, val, n + 1);
    return 0;
}

static int parse_uint(const char *s, unsigned *out)
{
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *s == '-' || *end || errno || v > 86400 * 365)
        return -1;
    *out = (unsigned)v;
    return 0;
}

int gs_cmd_doctor(int argc, char **argv)
{
    enum { O_ROOT = 256, O_NODE, O_KUBECONFIG, O_SKIP, O_STATE, O_KUBELET, O_GRACE, O_JSON, O_MPS };
    static const struct option opts[] = {
        {"root", required_argument, NULL, O_ROOT},
        {"node", required_argument, NULL, O_NODE},
        {"kubeconfig", required_argument, NULL, O_KUBECONFIG},
        {"skip-cluster", no_argument, NULL, O_SKIP},
        {"state-dir", required_argument, NULL, O_STATE},
        {"kubelet-dir", required_argument, NULL, O_KUBELET},
        {"grace", required_argument, NULL, O_GRACE},
        {"mps-pipe-dir", required_argument, NULL, O_MPS},
        {"json", no_argument, NULL, O_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct gs_doctor d;
    memset(&d, 0, sizeof d);
    d.grace_s = 300;
    const char *state = NULL, *mps = NULL;
    int json = 0, c;
    memcpy(d.kubelet_dir, GS_KUBELET_DIR_DEFAULT, sizeof GS_KUBELET_DIR_DEFAULT);
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_ROOT:
            if (set_str(d.root, sizeof d.root, optarg, "--root") < 0)
                return 2;
            break;
        case O_NODE:
            if (set_str(d.node, sizeof d.node, optarg, "--node") < 0)
                return 2;
            break;
        case O_KUBECONFIG: d.kubeconfig = optarg; break;
        case O_SKIP: d.skip_cluster = 1; break;
        case O_STATE: state = optarg; break;
        case O_MPS: mps = optarg; break;
        case O_KUBELET:
            if (set_str(d.kubelet_dir, sizeof d.kubelet_dir, optarg, "--kubelet-dir") < 0)
                return 2;
            break;
        case O_GRACE:
            if (parse_uint(optarg, &d.grace_s) < 0) {
                fprintf(stderr,
                        "gpuslice doctor: --grace '%s' is not a number of seconds "
                        "(e.g. --grace 300)\n",
                        optarg);
                return 2;
            }
            break;
        case O_JSON: json = 1; break;
        case 'h': usage(stdout); return 0;
        default:
            fprintf(stderr, "gpuslice doctor: unknown or incomplete option '%s'\n\n",
                    argv[optind - 1]);
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "gpuslice doctor: unexpected argument '%s'\n\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    /* "/" and "dir/" become "" and "dir": every path is built as root + "/abs". */
    size_t rl = strlen(d.root);
    while (rl > 0 && d.root[rl - 1] == '/')
        d.root[--rl] = '\0';
    struct stat st;
    if (rl > 0 && (stat(d.root, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr,
                "gpuslice doctor: --root %s is not a directory; give the folder that "
                "holds the node's /etc, /dev and /var\n",
                d.root);
        return 2;
    }
    /* In the agent's Pod the host name is the Pod's: the DaemonSet gives the
     * node's name as $NODE_NAME (the downward API), as the monitor reads it. */
    const char *env_node = getenv("NODE_NAME");
    if (!d.node[0] && env_node && *env_node &&
        set_str(d.node, sizeof d.node, env_node, "$NODE_NAME") < 0)
        return 2;
    if (!d.node[0]) {
        if (gethostname(d.node, sizeof d.node - 1) != 0)
            memcpy(d.node, "localhost", sizeof "localhost");
        d.node[sizeof d.node - 1] = '\0';
    }
    if (state) {
        if (set_str(d.state_dir, sizeof d.state_dir, state, "--state-dir") < 0)
            return 2;
    } else if (gs_doctor_path(&d, GS_STATE_ROOT_DEFAULT, d.state_dir, sizeof d.state_dir) != 0) {
        fprintf(stderr, "gpuslice doctor: --root %s is too long\n", d.root);
        return 2;
    }
    if (mps) {
        if (set_str(d.mps_pipe_dir, sizeof d.mps_pipe_dir, mps, "--mps-pipe-dir") < 0)
            return 2;
        d.mps_pipe_dir_given = 1;
    } else if (gs_doctor_path(&d, GS_MPS_DEFAULT_PIPE_DIR, d.mps_pipe_dir, sizeof d.mps_pipe_dir) !=
               0) {
        fprintf(stderr, "gpuslice doctor: --root %s is too long\n", d.root);
        return 2;
    }
    d.rep = gs_report_new();
    if (!d.rep) {
        fprintf(stderr, "gpuslice doctor: out of memory\n");
        return 1;
    }
    gs_node_check(&d);
    gs_runtime_check(&d);
    gs_kubelet_check(&d);
    gs_cluster_check(&d);
    gs_tenants_check(&d);
    gs_cluster_free(&d);
    int rc = gs_report_print(d.rep, &d, json);
    gs_report_free(d.rep);
    fflush(stdout);
    return rc;
}
