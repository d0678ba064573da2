/* `gpuslice agent`: the node daemon (docs/agent.md). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent.h"
#include "node/agent_config.h"
#include "common/log.h"

int gs_cmd_agent(int argc, char **argv);

/* The only global: set by the signal handler, read by the loop. */
static volatile int stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
    gs_agent_signal();
}

int gs_cmd_agent(int argc, char **argv)
{
    struct gs_agent_config cfg;
    gs_error err = {0};
    if (gs_agent_config_defaults(&cfg, &err) < 0) {
        fprintf(stderr, "gpuslice agent: %s\n", err.msg);
        return 2;
    }
    int rc = gs_agent_config_parse_args(&cfg, argc, argv, &err);
    if (rc == 1)
        return 0;
    if (rc < 0) {
        fprintf(stderr, "gpuslice agent: %s\n", err.msg);
        return 2;
    }
    int lvl = gs_log_level_parse(cfg.log_level);
    if (lvl < 0) {
        fprintf(stderr, "gpuslice agent: log_level '%s' is not error, warn, info or debug\n",
                cfg.log_level);
        return 2;
    }
    gs_log_set_level((enum gs_log_level)lvl);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct gs_agent *a = NULL;
    if (gs_agent_create(&a, &cfg, &err) < 0) {
        GS_LOGE("%s", err.msg);
        return 1;
    }
    rc = gs_agent_run(a, &stop_flag, &err);
    if (rc < 0)
        GS_LOGE("%s", err.msg);
    int in_flight = gs_agent_destroy(a);
    GS_LOGI("stopped");
    if (in_flight) {
        fflush(NULL);
        _exit(rc < 0 ? 1 : 0);
    }
    return rc < 0 ? 1 : 0;
}
