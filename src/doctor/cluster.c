#include "doctor/doctor.h"
void gs_cluster_check(struct gs_doctor *d)
{
    if (d->skip_cluster)
        gs_report_add(d->rep, GS_SEV_INFO, "cluster.skipped",
                      "cluster checks skipped: --skip-cluster");
}
