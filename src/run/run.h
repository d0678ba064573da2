#ifndef GS_RUN_H
#define GS_RUN_H

/* `gpuslice run`: argv[0] is the verb's name; returns the process exit status. */
int gs_cmd_run(int argc, char **argv);

#endif
