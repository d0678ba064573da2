/* The kubectl plugin (kubectl-gpuslice): request, top, doctor (docs/cli.md). */
#ifndef GS_KUBECTL_H
#define GS_KUBECTL_H

/* argv[0] is "kubectl" or the name the binary was run by (kubectl-gpuslice). */
int gs_cmd_kubectl(int argc, char **argv);

#endif
