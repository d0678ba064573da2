/* inventory.c: backend choice, health bookkeeping and file helpers shared by
 * the backends. */
#include "node/inventory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"

const char *gs_backend_name(enum gs_backend b)
{
    switch (b) {
    case GS_BACKEND_AUTO: return "auto";
    case GS_BACKEND_NVML: return "nvml";
    case GS_BACKEND_TEGRA: return "tegra";
    case GS_BACKEND_SIMULATED: return "simulated";
    }
    return "?";
}

int gs_inventory_read_file(const char *root, const char *path, char *buf, size_t len)
{
    char full[4096];
    int n = snprintf(full, sizeof full, "%s%s", root ? root : "", path);
    if (n < 0 || (size_t)n >= sizeof full)
        return GS_ERANGE;
    int fd = open(full, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? GS_ENOENT : GS_EIO;
    size_t got = 0;
    while (got + 1 < len) {
        ssize_t r = read(fd, buf + got, len - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    buf[got] = '\0';
    return (int)got;
}

int gs_inventory_xid_is_critical(uint64_t xid)
{
    static const uint64_t app_xids[] = {13, 31, 43, 45, 68, 109};
    for (size_t i = 0; i < sizeof app_xids / sizeof app_xids[0]; i++)
        if (xid == app_xids[i])
            return 0;
    return 1;
}

void gs_inventory_set_health(struct gs_inventory *inv, int gpu, int healthy, uint64_t xid)
{
    if (gpu < 0 || gpu >= inv->ngpu)
        return;
    struct gs_gpu *g = &inv->gpu[gpu];
    if (xid)
        atomic_store(&g->last_xid, xid);
    if (atomic_exchange(&g->healthy, healthy) != healthy) {
        atomic_fetch_add(&inv->health_gen, 1);
        if (inv->health_notify)
            inv->health_notify(inv->health_notify_ud);
        if (healthy)
            GS_LOGI("GPU %d (%s) is healthy again", gpu, g->uuid);
        else
            GS_LOGW("GPU %d (%s) is unhealthy (XID %llu): its slices are advertised as "
                    "Unhealthy until the agent restarts or the GPU recovers",
                    gpu, g->uuid, (unsigned long long)xid);
    }
}

int gs_inventory_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o, gs_error *err)
{
    memset(inv, 0, sizeof *inv);
    switch (o->backend) {
    case GS_BACKEND_NVML: return gs_inventory_nvml_probe(inv, o, err);
    case GS_BACKEND_TEGRA: return gs_inventory_tegra_probe(inv, o, err);
    case GS_BACKEND_SIMULATED: return gs_inventory_sim_probe(inv, o, err);
    case GS_BACKEND_AUTO: break;
    }
    /* The order go-nvlib's ResolvePlatform uses: Tegra files without NVML, or
     * an NVML that names an integrated GPU, mean Tegra; NVML alone means a
     * discrete GPU. The simulated backend is never chosen silently. */
    gs_error nerr = {0};
    int rc = gs_inventory_nvml_probe(inv, o, &nerr);
    if (rc == GS_OK) {
        int igpu = 0;
        for (int i = 0; i < inv->ngpu; i++)
            if (strstr(inv->gpu[i].name, "(nvgpu)"))
                igpu = 1;
        if (!igpu)
            return GS_OK;
        GS_LOGI("NVML names an integrated GPU (%s): using the tegra backend", inv->gpu[0].name);
        gs_inventory_close(inv);
        memset(inv, 0, sizeof *inv);
        return gs_inventory_tegra_probe(inv, o, err);
    }
    memset(inv, 0, sizeof *inv);
    if (gs_inventory_tegra_present(o->root))
        return gs_inventory_tegra_probe(inv, o, err);
    return gs_error_set(err, GS_ENOENT,
                        "no GPU found: NVML: %s; no Tegra signs under '%s' (/etc/nv_tegra_release, "
                        "/sys/devices/soc0/family). Install the NVIDIA driver, pass --backend, or "
                        "try the agent without a GPU with --backend simulated",
                        nerr.msg, *o->root ? o->root : "/");
}

void gs_inventory_close(struct gs_inventory *inv)
{
    if (inv->nvml)
        gs_inventory_nvml_watch_stop(inv);
}
