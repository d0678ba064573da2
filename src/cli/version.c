#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "common/gs_cuda.h"
#include "contract/ledger.h"
#include "contract/limits.h"

#ifndef GS_VERSION
#define GS_VERSION "dev"
#endif
#ifndef GS_GIT_REV
#define GS_GIT_REV "unknown"
#endif

int gs_cmd_version(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: gpuslice version\n\n"
               "Prints the version, the git revision and the build facts a bug report needs:\n"
               "the ledger ABI and limits file versions, the CUDA driver API declared, and\n"
               "whether this is the full or the minimal build.\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "gpuslice version: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    /* Build facts the doctor and bug reports need (the libnvidia-container habit). */
    printf("gpuslice %s (git %s)\n", GS_VERSION, GS_GIT_REV);
    printf("  ledger ABI version %d (%zu bytes, %d slots)\n", GS_LEDGER_VERSION,
           sizeof(struct gs_ledger), GS_LEDGER_SLOTS);
    printf("  limits file version %d\n", GS_LIMITS_VERSION);
    printf("  CUDA driver API declared up to %d\n", CUDA_VERSION_GS_DECLARED);
#ifdef GS_MINIMAL
    printf("  build: minimal (run, version)\n");
#else
    printf("  build: full\n");
#endif
    return 0;
}
