/* inventory_sim.c: simulated GPUs from a "key = value" config, for machines
 * without a GPU (CI, laptops, the tests). Everything it produces is labelled:
 * UUIDs start "SIM-", limits files say simulated = true, the log says so. */
#include "node/inventory.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/log.h"

struct sim_cfg {
    uint64_t gpus;
    uint64_t memory;
    char name[96];
    int integrated;
    char health_file[256];
};

#define F(f) offsetof(struct sim_cfg, f)
static const struct gs_cfg_entry sim_table[] = {
    {"gpus", GS_CFG_UINT, F(gpus), 1, GS_INV_MAX_GPUS, "1", NULL, "number of simulated GPUs"},
    {"memory", GS_CFG_BYTES, F(memory), 64ull << 20, 1ull << 50, "16Gi", NULL,
     "memory of each simulated GPU"},
    {"name", GS_CFG_STRING, F(name), 0, sizeof(((struct sim_cfg *)0)->name),
     "gpuslice simulated GPU", NULL, "product name shown"},
    {"integrated", GS_CFG_BOOL, F(integrated), 0, 0, "false", NULL,
     "simulate a unified-memory (Jetson-like) GPU"},
    {"health_file", GS_CFG_STRING, F(health_file), 0, sizeof(((struct sim_cfg *)0)->health_file),
     "", NULL, "file of '<gpu index> <xid>' lines; a critical XID marks that GPU unhealthy"},
};
#undef F

int gs_inventory_sim_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o,
                           gs_error *err)
{
    struct sim_cfg c;
    memset(&c, 0, sizeof c);
    int rc = gs_config_defaults(sim_table, GS_CFG_N(sim_table), &c, err);
    if (rc == GS_OK && o->sim_config && *o->sim_config)
        rc = gs_config_load_file(sim_table, GS_CFG_N(sim_table), &c, o->sim_config, err);
    if (rc < 0)
        return gs_error_wrap(err, "simulated backend (--sim-config)");
    inv->backend = GS_BACKEND_SIMULATED;
    inv->simulated = 1;
    inv->ngpu = (int)c.gpus;
    snprintf(inv->model, sizeof inv->model, "simulated");
    snprintf(inv->health_file, sizeof inv->health_file, "%s", c.health_file);
    for (int i = 0; i < inv->ngpu; i++) {
        struct gs_gpu *g = &inv->gpu[i];
        g->index = i;
        snprintf(g->uuid, sizeof g->uuid, "SIM-GPU-%04d", i);
        snprintf(g->name, sizeof g->name, "%s", c.name);
        memcpy(g->visible, g->uuid, sizeof g->visible); /* same size; snprintf from a field of the
                                                           same struct trips -Wrestrict */
        g->memory = c.memory;
        g->integrated = c.integrated;
        g->numa_node = -1;
        atomic_store(&g->healthy, 1);
    }
    char q[32];
    snprintf(q, sizeof q, "%llu", (unsigned long long)(c.memory >> 20));
    snprintf(inv->how, sizeof inv->how,
             "SIMULATED: %d GPU(s) of %s MiB each from %s; no real GPU behind it", inv->ngpu, q,
             o->sim_config && *o->sim_config ? o->sim_config : "built-in defaults");
    GS_LOGW("simulated GPU backend: %s", inv->how);
    gs_inventory_sim_poll(inv);
    return GS_OK;
}

int gs_inventory_sim_poll(struct gs_inventory *inv)
{
    if (!inv->simulated || !inv->health_file[0])
        return 0;
    int bad[GS_INV_MAX_GPUS] = {0};
    uint64_t xids[GS_INV_MAX_GPUS] = {0};
    char buf[4096];
    if (gs_inventory_read_file("", inv->health_file, buf, sizeof buf) >= 0) {
        char *save = NULL;
        for (char *line = buf; line; line = save) {
            char *nl = strchr(line, '\n');
            save = nl ? nl + 1 : NULL;
            if (nl)
                *nl = '\0';
            char *end;
            long idx = strtol(line, &end, 10);
            if (end == line || idx < 0 || idx >= inv->ngpu)
                continue;
            char *end2;
            unsigned long long xid = strtoull(end, &end2, 10);
            if (end2 == end)
                continue;
            if (gs_inventory_xid_is_critical(xid)) {
                bad[idx] = 1;
                xids[idx] = xid;
            }
        }
    }
    uint64_t before = atomic_load(&inv->health_gen);
    for (int i = 0; i < inv->ngpu; i++)
        gs_inventory_set_health(inv, i, !bad[i], xids[i]);
    return atomic_load(&inv->health_gen) != before;
}
