/* inventory_tegra.c: Jetson boards without NVML (docs/resources.md, unified memory).
 *
 * Identity comes from /proc/device-tree/compatible (NUL-separated, most
 * specific first, the SoC last; match on it, not on `model`) and
 * /sys/devices/soc0/family. The GPU shares the board's RAM, so the pool we
 * advertise is MemTotal minus reserves for the OS, K3s and the agent: our
 * design choice, stated in the log and the node file. */
#include "node/inventory.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "common/log.h"
#include "common/quantity.h"

int gs_inventory_tegra_present(const char *root)
{
    char buf[256];
    char p[4096];
    struct stat st;
    snprintf(p, sizeof p, "%s/etc/nv_tegra_release", root ? root : "");
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
        return 1;
    if (gs_inventory_read_file(root, "/sys/devices/soc0/family", buf, sizeof buf) > 0 &&
        strncasecmp(buf, "tegra", 5) == 0)
        return 1;
    return 0;
}

void gs_inventory_l4t_version(const char *rel, char *out, size_t len, int *major)
{
    out[0] = '\0';
    *major = 0;
    const char *r = rel ? strstr(rel, "# R") : NULL;
    const char *rev = rel ? strstr(rel, "REVISION: ") : NULL;
    if (!r || !rev)
        return;
    char *end;
    long maj = strtol(r + 3, &end, 10);
    if (end == r + 3 || maj < 0 || maj > 999)
        return;
    rev += strlen("REVISION: ");
    size_t n = strspn(rev, "0123456789.");
    if (n > 16)
        n = 16;
    snprintf(out, len, "%ld.%.*s", maj, (int)n, rev);
    *major = (int)maj;
}

/* The SoC is the last compatible entry ("nvidia,tegra234"). */
static void last_compatible(const char *buf, int len, char *out, size_t outlen, char *first,
                            size_t firstlen)
{
    out[0] = first[0] = '\0';
    int start = 0;
    for (int i = 0; i <= len; i++) {
        if (i == len || buf[i] == '\0') {
            if (i > start) {
                if (!first[0])
                    snprintf(first, firstlen, "%.*s", i - start, buf + start);
                snprintf(out, outlen, "%.*s", i - start, buf + start);
            }
            start = i + 1;
        }
    }
}

static int meminfo_kb(const char *text, const char *key, uint64_t *out)
{
    size_t kl = strlen(key);
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        if (!strncmp(p, key, kl) && p[kl] == ':') {
            char *end;
            unsigned long long v = strtoull(p + kl + 1, &end, 10);
            if (end == p + kl + 1)
                return GS_EINVAL;
            *out = (uint64_t)v * 1024;
            return GS_OK;
        }
    }
    return GS_ENOENT;
}

/* Device nodes a Jetson container needs (the toolkit's JetPack 6 devices.csv);
 * only those present on the host are passed. */
static const char *const tegra_nodes[] = {
    "/dev/nvmap",
    "/dev/nvhost-ctrl-gpu",
    "/dev/nvhost-gpu",
    "/dev/nvhost-as-gpu",
    "/dev/nvhost-ctxsw-gpu",
    "/dev/nvhost-dbg-gpu",
    "/dev/nvhost-prof-gpu",
    "/dev/nvhost-power-gpu",
    "/dev/nvhost-sched-gpu",
    "/dev/nvhost-tsg-gpu",
    "/dev/nvgpu/igpu0/as",
    "/dev/nvgpu/igpu0/channel",
    "/dev/nvgpu/igpu0/ctrl",
    "/dev/nvgpu/igpu0/power",
    "/dev/nvgpu/igpu0/sched",
    "/dev/nvgpu/igpu0/tsg",
    "/dev/host1x-fence",
    "/dev/nvsciipc",
};

int gs_inventory_tegra_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o,
                             gs_error *err)
{
    const char *root = o->root ? o->root : "";
    char compat[1024], soc[96], first[96], model[128], meminfo[8192];
    int cl = gs_inventory_read_file(root, "/proc/device-tree/compatible", compat, sizeof compat);
    if (cl < 0 && !gs_inventory_tegra_present(root))
        return gs_error_set(err, GS_ENOENT,
                            "no Jetson found under '%s': /proc/device-tree/compatible and "
                            "/sys/devices/soc0/family are missing; use --backend nvml or simulated",
                            *root ? root : "/");
    if (cl < 0)
        cl = 0;
    last_compatible(compat, cl, soc, sizeof soc, first, sizeof first);
    if (cl > 0 && strncmp(soc, "nvidia,tegra", 12) != 0)
        return gs_error_set(err, GS_ENOENT,
                            "'%s%s' ends with '%s', not an nvidia,tegra SoC: this is not a Jetson; "
                            "use --backend nvml or simulated",
                            root, "/proc/device-tree/compatible", soc);
    if (gs_inventory_read_file(root, "/proc/device-tree/model", model, sizeof model) < 0)
        snprintf(model, sizeof model, "%s", first[0] ? first : "Jetson");
    model[strcspn(model, "\n")] = '\0';
    char release[512];
    int major;
    if (gs_inventory_read_file(root, "/etc/nv_tegra_release", release, sizeof release) > 0)
        gs_inventory_l4t_version(release, inv->driver_version, sizeof inv->driver_version, &major);
    if (gs_inventory_read_file(root, "/proc/meminfo", meminfo, sizeof meminfo) < 0)
        return gs_error_set(err, GS_ENOENT,
                            "cannot read %s/proc/meminfo: the Jetson GPU pool is the board's RAM "
                            "and the agent needs MemTotal (mount /proc into the agent)",
                            root);
    uint64_t total = 0;
    if (meminfo_kb(meminfo, "MemTotal", &total) < 0 || total == 0)
        return gs_error_set(err, GS_EINVAL, "%s/proc/meminfo has no MemTotal line", root);
    uint64_t reserve = o->tegra_reserve_os + o->tegra_reserve_k3s + o->tegra_reserve_agent;
    if (reserve >= total) {
        char t[32], r[32];
        gs_quantity_format_bytes(total, t, sizeof t);
        gs_quantity_format_bytes(reserve, r, sizeof r);
        return gs_error_set(err, GS_ERANGE,
                            "the reserves for OS, K3s and agent (%s) leave nothing of the board's "
                            "%s RAM for GPU slices; lower tegra_reserve_os/_k3s/_agent",
                            r, t);
    }
    inv->backend = GS_BACKEND_TEGRA;
    inv->ngpu = 1;
    snprintf(inv->model, sizeof inv->model, "%s", model);
    struct gs_gpu *g = &inv->gpu[0];
    g->index = 0;
    /* The NVIDIA plugin names the Tegra GPU "tegra"; CSV-mode CDI knows only
     * nvidia.com/gpu=0 and =all, and the runtime's CSV mode wants index 0. */
    snprintf(g->uuid, sizeof g->uuid, "tegra");
    snprintf(g->name, sizeof g->name, "%.40s (%.50s)", soc[0] ? soc + 7 : "tegra", model);
    snprintf(g->visible, sizeof g->visible, "0");
    g->memory = total - reserve;
    g->integrated = 1;
    g->numa_node = -1;
    atomic_store(&g->healthy, 1);
    for (size_t i = 0; i < sizeof tegra_nodes / sizeof tegra_nodes[0] && g->ndev < GS_INV_MAX_NODES;
         i++) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s%s", root, tegra_nodes[i]);
        if (stat(p, &st) == 0)
            snprintf(g->dev[g->ndev++], sizeof g->dev[0], "%s", tegra_nodes[i]);
    }
    char t[32], r[32], pool[32];
    gs_quantity_format_bytes(total, t, sizeof t);
    gs_quantity_format_bytes(reserve, r, sizeof r);
    gs_quantity_format_bytes(g->memory, pool, sizeof pool);
    snprintf(inv->how, sizeof inv->how,
             "%s (SoC %s): GPU pool = MemTotal %s - reserves %s (OS %llu MiB, K3s %llu "
             "MiB, agent %llu MiB) = %s",
             model, soc[0] ? soc : "unknown", t, r, (unsigned long long)(o->tegra_reserve_os >> 20),
             (unsigned long long)(o->tegra_reserve_k3s >> 20),
             (unsigned long long)(o->tegra_reserve_agent >> 20), pool);
    GS_LOGI("tegra backend: %s", inv->how);
    return GS_OK;
}
