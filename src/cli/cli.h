#ifndef GS_CLI_H
#define GS_CLI_H

/* Each verb: argv[0] is the verb's name; returns the process exit status. */
int gs_cmd_version(int argc, char **argv);

#endif
