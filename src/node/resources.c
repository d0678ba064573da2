/* resources.c: from GPUs and settings to advertised resources and IDs. */
#include "node/resources.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/quantity.h"
#include "contract/slice.h"

const char *gs_res_kind_name(enum gs_res_kind k)
{
    switch (k) {
    case GS_RES_MEMORY: return "memory";
    case GS_RES_COMPUTE: return "compute";
    case GS_RES_REALTIME: return "realtime";
    case GS_RES_REPLICA: return "replica";
    case GS_RES_NKINDS: break;
    }
    return "?";
}

static struct gs_resource *add(struct gs_resources *rs, const char *name, const char *sock,
                               enum gs_res_kind kind)
{
    struct gs_resource *r = &rs->r[rs->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->socket, sizeof r->socket, "%s", sock);
    r->kind = kind;
    return r;
}

static int build_replica(struct gs_resources *rs, const struct gs_inventory *inv,
                         const struct gs_sharing *sh, gs_error *err)
{
    const struct gs_sharing_resource *s = &sh->res[0];
    char name[64];
    if (s->rename[0])
        snprintf(name, sizeof name, "%s", s->rename);
    else if (sh->rename_by_default)
        snprintf(name, sizeof name, "%.50s.shared", s->name);
    else
        snprintf(name, sizeof name, "%s", s->name);
    struct gs_resource *r = add(rs, name, GS_SOCK_REPLICA, GS_RES_REPLICA);
    r->fail_gt_one = sh->fail_requests_greater_than_one;
    unsigned n = (unsigned)s->replicas;
    r->unit_pct = 100 / n;
    rs->replica_mode = 1;
    for (int g = 0; g < inv->ngpu; g++) {
        uint64_t need = (uint64_t)n * rs->context_reserve[g];
        if (inv->gpu[g].memory <= need + n * (64ull << 20)) {
            char t[32], c[32];
            gs_quantity_format_bytes(inv->gpu[g].memory, t, sizeof t);
            gs_quantity_format_bytes(rs->context_reserve[g], c, sizeof c);
            return gs_error_set(err, GS_ERANGE,
                                "GPU %d has %s: %u replicas with %s context reserve each leave "
                                "under 64 MiB per replica; lower replicas or context_reserve",
                                g, t, n, c);
        }
        r->per_gpu[g] = (int)n;
        r->unit_bytes[g] = (inv->gpu[g].memory - need) / n;
        rs->max_tenants[g] = (int)n;
        rs->advertised[g] = r->unit_bytes[g] * n;
    }
    return GS_OK;
}

static int build_fractional(struct gs_resources *rs, const struct gs_inventory *inv,
                            const struct gs_agent_config *c, gs_error *err)
{
    struct gs_resource *m = add(rs, GS_RES_MEMORY_NAME, GS_SOCK_MEMORY, GS_RES_MEMORY);
    struct gs_resource *p = add(rs, GS_RES_COMPUTE_NAME, GS_SOCK_COMPUTE, GS_RES_COMPUTE);
    p->unit_pct = 1;
    struct gs_resource *rt = NULL;
    if (c->realtime_slots_per_gpu)
        rt = add(rs, GS_RES_REALTIME_NAME, GS_SOCK_REALTIME, GS_RES_REALTIME);
    for (int g = 0; g < inv->ngpu; g++) {
        uint64_t total = inv->gpu[g].memory;
        uint64_t need = c->max_slices_per_gpu * rs->context_reserve[g];
        char t[32], u[32];
        gs_quantity_format_bytes(total, t, sizeof t);
        gs_quantity_format_bytes(c->memory_unit, u, sizeof u);
        if (total <= need + c->memory_unit)
            return gs_error_set(err, GS_ERANGE,
                                "GPU %d has %s: %llu tenants x %llu MiB context reserve leave no "
                                "%s unit; lower max_slices_per_gpu or context_reserve",
                                g, t, (unsigned long long)c->max_slices_per_gpu,
                                (unsigned long long)(rs->context_reserve[g] >> 20), u);
        uint64_t units = (total - need) / c->memory_unit;
        if (units > c->max_units_per_gpu) {
            uint64_t min_unit = (total - need + c->max_units_per_gpu - 1) / c->max_units_per_gpu;
            return gs_error_set(err, GS_ERANGE,
                                "GPU %d has %s: at memory_unit %s that is %llu units, above "
                                "max_units_per_gpu %llu (which keeps ListAndWatch small); raise "
                                "memory_unit to at least %llu MiB",
                                g, t, u, (unsigned long long)units,
                                (unsigned long long)c->max_units_per_gpu,
                                (unsigned long long)((min_unit + (1 << 20) - 1) >> 20));
        }
        m->per_gpu[g] = (int)units;
        m->unit_bytes[g] = c->memory_unit;
        p->per_gpu[g] = 100;
        if (rt)
            rt->per_gpu[g] = (int)c->realtime_slots_per_gpu;
        rs->max_tenants[g] = (int)c->max_slices_per_gpu;
        rs->advertised[g] = units * c->memory_unit;
    }
    return GS_OK;
}

int gs_resources_build(struct gs_resources *rs, const struct gs_inventory *inv,
                       const struct gs_agent_config *c, const struct gs_sharing *sharing,
                       gs_error *err)
{
    memset(rs, 0, sizeof *rs);
    for (int g = 0; g < inv->ngpu; g++) {
        int rc = gs_agent_config_context_reserve(c, inv->gpu[g].integrated, &rs->context_reserve[g],
                                                 err);
        if (rc < 0)
            return rc;
    }
    int rc = sharing && sharing->n ? build_replica(rs, inv, sharing, err)
                                   : build_fractional(rs, inv, c, err);
    if (rc < 0)
        return rc;
    if (rs->replica_mode && c->realtime_slots_per_gpu) {
        struct gs_resource *rt = add(rs, GS_RES_REALTIME_NAME, GS_SOCK_REALTIME, GS_RES_REALTIME);
        for (int g = 0; g < inv->ngpu; g++)
            rt->per_gpu[g] = (int)c->realtime_slots_per_gpu;
    }
    /* Each ListAndWatch device costs about 30 bytes on the wire (ID, health,
     * framing); check the largest list against our budget. */
    for (int i = 0; i < rs->n; i++) {
        size_t bytes = (size_t)gs_resources_total_units(&rs->r[i], inv->ngpu) * 48;
        if (bytes > GS_RES_LIST_BUDGET)
            return gs_error_set(err, GS_ERANGE,
                                "%s would list %d devices (~%zu KiB), above the agent's 1 MiB "
                                "budget for a ListAndWatch message; raise memory_unit",
                                rs->r[i].name, gs_resources_total_units(&rs->r[i], inv->ngpu),
                                bytes >> 10);
    }
    return GS_OK;
}

int gs_resources_find(const struct gs_resources *rs, const char *name)
{
    for (int i = 0; i < rs->n; i++)
        if (!strcmp(rs->r[i].name, name))
            return i;
    return -1;
}

int gs_resources_total_units(const struct gs_resource *r, int ngpu)
{
    int t = 0;
    for (int g = 0; g < ngpu; g++)
        t += r->per_gpu[g];
    return t;
}

int gs_resources_device_id(const struct gs_resource *r, const struct gs_inventory *inv, int gpu,
                           int unit, char *buf, size_t len)
{
    int n;
    switch (r->kind) {
    case GS_RES_MEMORY: n = snprintf(buf, len, "gpu%d-mem-%04d", gpu, unit); break;
    case GS_RES_COMPUTE: n = snprintf(buf, len, "gpu%d-pct-%03d", gpu, unit); break;
    case GS_RES_REALTIME: n = snprintf(buf, len, "gpu%d-rt-%d", gpu, unit); break;
    case GS_RES_REPLICA: n = snprintf(buf, len, "%s::%d", inv->gpu[gpu].uuid, unit); break;
    default: return GS_EINVAL;
    }
    return n < 0 || (size_t)n >= len ? GS_ERANGE : GS_OK;
}

static int parse_nonneg(const char *s, const char **end)
{
    if (*s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *e;
    long v = strtol(s, &e, 10);
    if (errno || v > 1000000)
        return -1;
    *end = e;
    return (int)v;
}

int gs_resources_parse_id(const struct gs_resource *r, const struct gs_inventory *inv,
                          const char *id, int *gpu, int *unit)
{
    int g = -1, u = -1;
    const char *end = id;
    if (strnlen(id, 128) >= 128)
        return GS_EINVAL;
    if (r->kind == GS_RES_REPLICA) {
        const char *sep = strstr(id, "::");
        if (!sep)
            return GS_EINVAL;
        for (int i = 0; i < inv->ngpu; i++)
            if (strlen(inv->gpu[i].uuid) == (size_t)(sep - id) &&
                !strncmp(inv->gpu[i].uuid, id, (size_t)(sep - id)))
                g = i;
        if (g < 0)
            return GS_EINVAL;
        u = parse_nonneg(sep + 2, &end);
    } else {
        if (strncmp(id, "gpu", 3) != 0)
            return GS_EINVAL;
        g = parse_nonneg(id + 3, &end);
        if (g < 0 || g >= inv->ngpu)
            return GS_EINVAL;
        if (*end != '-')
            return GS_EINVAL;
        const char *p = strchr(end + 1, '-');
        if (!p)
            return GS_EINVAL;
        u = parse_nonneg(p + 1, &end);
    }
    if (g < 0 || g >= inv->ngpu || u < 0 || u >= r->per_gpu[g] || *end)
        return GS_EINVAL;
    char canon[128];
    if (gs_resources_device_id(r, inv, g, u, canon, sizeof canon) < 0 || strcmp(canon, id) != 0)
        return GS_EINVAL;
    *gpu = g;
    *unit = u;
    return GS_OK;
}

void gs_resources_fill_limits(const struct gs_resources *rs, const struct gs_inventory *inv,
                              const struct gs_agent_config *c, int gpu, uint64_t mem, uint64_t pct,
                              int critical, const char *id, struct gs_limits *l)
{
    gs_limits_defaults(l);
    l->memory = mem ? mem : 1;
    l->compute = pct > 100 ? 100 : pct;
    l->compute_mode = c->compute_mode;
    l->sharing = c->compute_sharing;
    l->yield = gs_agent_config_yield(c);
    l->green_sms = l->yield == GS_YIELD_SHRINK && !critical ? c->besteffort_green_sms : 0;
    l->priority = critical ? GS_PRIO_CRITICAL : GS_PRIO_BEST_EFFORT;
    l->guard_us = gs_limits_guard_applies(l) ? c->besteffort_guard_us : 0;
    l->prime_us = gs_limits_prime_applies(l) ? c->critical_prime_us : 0;
    l->power_guard = gs_limits_power_guard_applies(l) ? c->besteffort_power_guard : 0;
    l->mps_threads =
        critical || c->compute_sharing != GS_SHARING_MPS ? 0 : c->besteffort_mps_threads;
    l->context_reserve = rs->context_reserve[gpu];
    l->simulated = inv->simulated;
    snprintf(l->device, sizeof l->device, "%s", inv->gpu[gpu].visible);
    snprintf(l->slice_id, sizeof l->slice_id, "%s", id);
}

int gs_resources_standalone_slice(const struct gs_agent_config *c, uint64_t memory,
                                  unsigned compute, int critical, const char *id,
                                  struct gs_limits *l, struct gs_slice_paths *paths, gs_error *err)
{
    struct gs_inventory inv;
    struct gs_resources rs;
    struct gs_inventory_opts o = {.backend = (enum gs_backend)c->backend,
                                  .root = c->root,
                                  .sim_config = c->sim_config,
                                  .nvml_library = c->nvml_library,
                                  .tegra_reserve_os = c->tegra_reserve_os,
                                  .tegra_reserve_k3s = c->tegra_reserve_k3s,
                                  .tegra_reserve_agent = c->tegra_reserve_agent};
    int rc = gs_inventory_probe(&inv, &o, err);
    if (rc < 0)
        return rc;
    rc = gs_resources_build(&rs, &inv, c, NULL, err);
    if (rc == GS_OK && compute > 100)
        rc = gs_error_set(err, GS_ERANGE, "compute %u%% is more than one GPU; use 1 to 100",
                          compute);
    int gpu = 0;
    for (int g = 1; rc == GS_OK && g < inv.ngpu; g++)
        if (rs.advertised[g] > rs.advertised[gpu])
            gpu = g;
    if (rc == GS_OK && memory > rs.advertised[gpu]) {
        char want[32], have[32];
        gs_quantity_format_bytes(memory, want, sizeof want);
        gs_quantity_format_bytes(rs.advertised[gpu], have, sizeof have);
        rc = gs_error_set(err, GS_ERANGE,
                          "--memory %s does not fit: GPU %d offers %s to slices (after %d x %llu "
                          "MiB context reserve); ask for less",
                          want, gpu, have, rs.max_tenants[gpu],
                          (unsigned long long)(rs.context_reserve[gpu] >> 20));
    }
    if (rc == GS_OK) {
        gs_resources_fill_limits(&rs, &inv, c, gpu, memory, compute, critical, id, l);
        rc = gs_slice_prepare(c->state_root, id, l, paths, err);
    }
    gs_inventory_close(&inv);
    return rc;
}
