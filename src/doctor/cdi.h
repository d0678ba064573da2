/* CDI specs (the Container Device Interface): what the spec directories hold,
 * so the doctor can say whether containerd can resolve "nvidia.com/gpu=0". */
#ifndef GS_CDI_H
#define GS_CDI_H

#include "doctor/doctor.h"

struct gs_cdi_scan {
    char devices[1024]; /* "nvidia.com/gpu=0 (/etc/cdi/nvidia.yaml), ..." */
    int nvidia;         /* a spec of kind nvidia.com/gpu with at least one device */
    char stale[1024];   /* device nodes named by a spec but missing on the host */
    char invalid[1024]; /* "file: reason" of specs that do not parse */
    char searched[512]; /* the directories looked in */
};

/* Reads every *.yaml, *.yml and *.json in dirs (host paths; root is prepended). */
void gs_cdi_scan(const struct gs_doctor *d, char *const *dirs, size_t ndirs,
                 struct gs_cdi_scan *out);

#endif
