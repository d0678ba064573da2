/* gpuslice: one binary, one folder per verb (agent/, run/, doctor/, monitor/, kubectl/) under
 * this dispatcher. Parts that need Debian libraries (agent, doctor, monitor, kubectl) are linked
 * only in the full build; the minimal build (make minimal) keeps run and version, so the GPU bench
 * machine needs nothing but the toolchain. Run by the name kubectl-gpuslice (make install links
 * it), the binary is the kubectl plugin: `kubectl gpuslice top` runs `kubectl-gpuslice top`. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "run/run.h"
#include "common/log.h"

int gs_cmd_agent(int argc, char **argv) __attribute__((weak));
int gs_cmd_doctor(int argc, char **argv) __attribute__((weak));
int gs_cmd_monitor(int argc, char **argv) __attribute__((weak));
int gs_cmd_kubectl(int argc, char **argv) __attribute__((weak));

struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
};

static void usage(FILE *out);
static int cmd_help(int argc, char **argv);

static const struct verb verbs[] = {
    {"run", gs_cmd_run, "run a command under a GPU slice (memory cap, compute share)"},
    {"agent", NULL, "node daemon: kubelet device plugin, allocation state, monitor"},
    {"doctor", NULL, "find GPU misconfigurations on a K3s node and say the fix"},
    {"monitor", NULL, "which slice uses what: terminal view, JSON, dashboard and /metrics"},
    {"kubectl", NULL, "the kubectl plugin (kubectl gpuslice): request, top, doctor"},
    {"version", gs_cmd_version, "print version and build facts"},
    {"help", cmd_help, "this text, or 'help VERB' for a verb's options"},
};

static int (*verb_fn(const struct verb *v))(int, char **)
{
    if (v->fn)
        return v->fn;
    if (!strcmp(v->name, "agent"))
        return gs_cmd_agent;
    if (!strcmp(v->name, "doctor"))
        return gs_cmd_doctor;
    if (!strcmp(v->name, "monitor"))
        return gs_cmd_monitor;
    if (!strcmp(v->name, "kubectl"))
        return gs_cmd_kubectl;
    return NULL;
}

static const struct verb *find_verb(const char *name)
{
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        if (!strcmp(verbs[i].name, name))
            return &verbs[i];
    return NULL;
}

static int not_built(const char *name)
{
    fprintf(stderr,
            "gpuslice: '%s' is not in this build (built with 'make minimal'); "
            "build with plain 'make' after scripts/install-deps.sh\n",
            name);
    return 2;
}

/* `gpuslice help VERB` is `gpuslice VERB --help`: one text per verb, so the two
 * can never disagree. */
static int cmd_help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return 0;
    }
    const struct verb *v = find_verb(argv[1]);
    if (!v) {
        fprintf(stderr, "gpuslice help: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    if (v->fn == cmd_help) {
        usage(stdout);
        return 0;
    }
    int (*fn)(int, char **) = verb_fn(v);
    if (!fn)
        return not_built(v->name);
    char name[32], opt[] = "--help";
    snprintf(name, sizeof name, "%s", v->name);
    char *args[] = {name, opt, NULL};
    gs_log_init(v->name);
    return fn(2, args);
}

static void usage(FILE *out)
{
    fprintf(out, "usage: gpuslice <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  %-9s %s%s\n", verbs[i].name, verbs[i].help,
                verb_fn(&verbs[i]) ? "" : " (not in this build)");
    fprintf(out, "\n'gpuslice help <command>' or 'gpuslice <command> --help' shows a command's "
                 "options;\nman gpuslice and man gpuslice-<command> say more.\n");
}

/* The shells' completion scripts and kubectl's plugin completion ask here. */
static int complete(const char *fixed_verb, int cobra, int argc, char **argv)
{
    struct gs_cli_verb v[sizeof verbs / sizeof verbs[0]];
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        v[i].name = verbs[i].name;
        v[i].fn = verb_fn(&verbs[i]);
    }
    return gs_cli_complete(v, sizeof v / sizeof v[0], fixed_verb, cobra, argc, argv);
}

int main(int argc, char **argv)
{
    gs_log_init("cli");
    const char *base = strrchr(argv[0], '/');
    base = base ? base + 1 : argv[0];
    int plugin = !strcmp(base, "kubectl-gpuslice");
    /* kubectl runs kubectl_complete-gpuslice with the plugin's words, the last one
     * being completed (kubectl's plugin_completion.go). */
    if (!strcmp(base, "kubectl_complete-gpuslice"))
        return complete("kubectl", 1, argc - 1, argv + 1);
    if (argc >= 2 && !strcmp(argv[1], "__complete"))
        return complete(plugin ? "kubectl" : NULL, 0, argc - 2, argv + 2);
    if (plugin) {
        if (!gs_cmd_kubectl)
            return not_built("kubectl");
        gs_log_init("kubectl");
        return gs_cmd_kubectl(argc, argv);
    }
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        name = "help";
    if (!strcmp(name, "--version"))
        name = "version";
    const struct verb *v = find_verb(name);
    if (!v) {
        fprintf(stderr, "gpuslice: unknown command '%s'\n\n", argv[1]);
        usage(stderr);
        return 2;
    }
    int (*fn)(int, char **) = verb_fn(v);
    if (!fn)
        return not_built(name);
    gs_log_init(name);
    return fn(argc - 1, argv + 1);
}
