#ifndef GS_CLI_H
#define GS_CLI_H

/* Each verb: argv[0] is the verb's name; returns the process exit status. */
int gs_cmd_version(int argc, char **argv);

#include <stddef.h>

struct gs_cli_verb {
    const char *name;
    int (*fn)(int argc, char **argv); /* NULL: not in this build */
};

/* `gpuslice __complete WORD...` (complete.c): prints the candidates for the last
 * word, one a line. fixed_verb: the verb the program's name stands for
 * (kubectl-gpuslice), or NULL; cobra: end with kubectl's ":<directive>" line. */
int gs_cli_complete(const struct gs_cli_verb *verbs, size_t nverbs, const char *fixed_verb,
                    int cobra, int argc, char **argv);

#endif
