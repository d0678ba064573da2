/* gpuslice: one binary, one folder per verb (agent/, run/, doctor/, monitor/) under this
 * dispatcher. Parts that need Debian libraries (agent, doctor, monitor) are linked only in the full
 * build; the minimal build (make minimal) keeps run and version, so the GPU bench machine needs
 * nothing but the toolchain. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "run/run.h"
#include "common/log.h"

int gs_cmd_agent(int argc, char **argv) __attribute__((weak));
int gs_cmd_doctor(int argc, char **argv) __attribute__((weak));
int gs_cmd_monitor(int argc, char **argv) __attribute__((weak));

struct verb {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *help;
};

static void usage(FILE *out);

static int cmd_help(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    usage(stdout);
    return 0;
}

static const struct verb verbs[] = {
    {"run", gs_cmd_run, "run a command under a GPU slice (memory cap, compute share)"},
    {"agent", NULL, "node daemon: kubelet device plugin, allocation state, monitor"},
    {"doctor", NULL, "find GPU misconfigurations on a K3s node and say the fix"},
    {"monitor", NULL, "show which slice uses what (terminal view)"},
    {"version", gs_cmd_version, "print version and build facts"},
    {"help", cmd_help, "this text"},
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
    return NULL;
}

static void usage(FILE *out)
{
    fprintf(out, "usage: gpuslice <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(out, "  %-9s %s%s\n", verbs[i].name, verbs[i].help,
                verb_fn(&verbs[i]) ? "" : " (not in this build)");
    fprintf(out, "\n'gpuslice <command> --help' shows a command's options.\n");
}

int main(int argc, char **argv)
{
    gs_log_init("cli");
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h"))
        return cmd_help(0, NULL);
    if (!strcmp(name, "--version"))
        name = "version";
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++) {
        if (strcmp(verbs[i].name, name) != 0)
            continue;
        int (*fn)(int, char **) = verb_fn(&verbs[i]);
        if (!fn) {
            fprintf(stderr,
                    "gpuslice: '%s' is not in this build (built with 'make minimal'); "
                    "build with plain 'make' after scripts/install-deps.sh\n",
                    name);
            return 2;
        }
        gs_log_init(name);
        return fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "gpuslice: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return 2;
}
