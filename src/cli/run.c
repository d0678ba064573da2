#include <stdio.h>

#include "cli/cli.h"

int gs_cmd_run(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "gpuslice run: not built yet (issue 3)\n");
    return 2;
}
