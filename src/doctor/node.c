/* Node checks: which GPU this is (discrete or Jetson), its device nodes, the
 * kernel modules and the driver's libcuda. A Jetson is recognised as NVIDIA's
 * go-nvlib does (/etc/nv_tegra_release, /sys/devices/soc0/family "tegra"), plus the
 * device tree's compatible list (the SoC is its last entry); Thor (tegra264)
 * runs nvidia.ko and has /dev/nvidia* like a discrete GPU. */
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "doctor/doctor.h"
#include "node/inventory.h"

/* Reads a small file under root; NULL when missing or unreadable. */
static char *read_small(const struct gs_doctor *d, const char *abs, size_t *len)
{
    char p[PATH_MAX];
    char *buf = NULL;
    if (gs_doctor_path(d, abs, p, sizeof p) != 0)
        return NULL;
    if (gs_file_read(p, 1 << 20, &buf, len, NULL) != 0)
        return NULL;
    return buf;
}

/* First line, trimmed, into out. */
static void first_line(const char *s, char *out, size_t len)
{
    size_t n = 0;
    while (s && s[n] && s[n] != '\n' && s[n] != '\0')
        n++;
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        n--;
    if (n >= len)
        n = len - 1;
    if (n)
        memcpy(out, s, n);
    out[n] = '\0';
}

/* A device node exists. On the real root it must be a character device; in a
 * fixture or node image any file stands for it (git cannot hold device nodes). */
static int dev_present(const struct gs_doctor *d, const char *abs)
{
    char p[PATH_MAX];
    struct stat st;
    if (gs_doctor_path(d, abs, p, sizeof p) != 0 || stat(p, &st) != 0)
        return 0;
    return d->root[0] ? 1 : S_ISCHR(st.st_mode);
}

/* Whether a module is listed in /proc/modules (contents given); "-" and "_" are the same. */
static int module_loaded(const char *modules, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = modules; line && *line;) {
        size_t i = 0;
        while (i < n && line[i] &&
               (line[i] == name[i] ||
                ((line[i] == '-' || line[i] == '_') && (name[i] == '-' || name[i] == '_'))))
            i++;
        if (i == n && (line[n] == ' ' || line[n] == '\n' || line[n] == '\0'))
            return 1;
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return 0;
}

static void check_meminfo(struct gs_doctor *d)
{
    char *mi = read_small(d, "/proc/meminfo", NULL);
    const char *p = mi ? strstr(mi, "MemTotal:") : NULL;
    if (p) {
        unsigned long long kb = strtoull(p + strlen("MemTotal:"), NULL, 10);
        if (kb > 0 && kb < (1ull << 44))
            d->mem_total = kb * 1024;
    }
    free(mi);
}

/* The compatible list's entries joined with ", " (NUL-separated in the file). */
static void compatible_text(const char *buf, size_t len, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 3 < outlen; i++) {
        if (buf[i] == '\0') {
            if (i + 1 < len) {
                out[o++] = ',';
                out[o++] = ' ';
            }
        } else if (isprint((unsigned char)buf[i])) {
            out[o++] = buf[i];
        }
    }
    out[o] = '\0';
}

static int detect_jetson(struct gs_doctor *d, struct gs_finding **pf)
{
    size_t clen = 0;
    char *compat = read_small(d, "/proc/device-tree/compatible", &clen);
    char *family = read_small(d, "/sys/devices/soc0/family", NULL);
    char *release = read_small(d, "/etc/nv_tegra_release", NULL);
    int tegra_compat = 0;
    for (size_t i = 0; compat && i < clen; i += strlen(compat + i) + 1)
        if (!strncmp(compat + i, "nvidia,tegra", strlen("nvidia,tegra")))
            tegra_compat = 1;
    int jetson = release || (family && !strncasecmp(family, "tegra", 5)) || tegra_compat;
    if (!jetson)
        goto out;
    d->platform = GS_PLAT_JETSON;
    for (size_t i = 0; compat && i < clen; i += strlen(compat + i) + 1)
        if (!strcmp(compat + i, "nvidia,tegra264"))
            d->thor = 1;
    char model[160] = "", ver[32] = "", rel1[200] = "";
    int major = 0;
    char *m = read_small(d, "/proc/device-tree/model", NULL);
    if (m)
        first_line(m, model, sizeof model);
    free(m);
    gs_inventory_l4t_version(release, ver, sizeof ver, &major);
    struct gs_finding *f =
        gs_report_add(d->rep, GS_SEV_OK, "node.platform", "Jetson%s%s%s%s%s (unified memory)",
                      model[0] ? ": " : "", model, ver[0] ? ", L4T " : "", ver,
                      d->thor ? ", Thor (nvidia.ko)" : "");
    if (release) {
        first_line(release, rel1, sizeof rel1);
        gs_finding_evidence(f, "/etc/nv_tegra_release: %s", rel1);
    }
    if (family) {
        first_line(family, rel1, sizeof rel1);
        gs_finding_evidence(f, "/sys/devices/soc0/family: %s", rel1);
    }
    if (compat) {
        char text[512];
        compatible_text(compat, clen, text, sizeof text);
        gs_finding_evidence(f, "/proc/device-tree/compatible: %s", text);
    } else {
        struct gs_finding *w =
            gs_report_add(d->rep, GS_SEV_WARN, "node.device-tree-missing",
                          "Jetson signs found but no device tree: the board model cannot be told");
        gs_finding_evidence(w, "%s/proc/device-tree/compatible is missing", d->root);
        gs_finding_fix(w, "On a running Jetson /proc/device-tree is always there: check that /proc "
                          "is mounted (and, for a node image, that --root points at it).");
    }
    *pf = f;
out:
    free(compat);
    free(family);
    free(release);
    return jetson;
}

static void check_devices(struct gs_doctor *d)
{
    char missing[512] = "";
    size_t ml = 0;
    int uvm_missing = 0, ok = 1;
#define MISSING(path)                                                                       \
    do {                                                                                    \
        ok = 0;                                                                             \
        int n_ = snprintf(missing + ml, sizeof missing - ml, "%s%s", ml ? ", " : "", path); \
        if (n_ > 0 && (size_t)n_ < sizeof missing - ml)                                     \
            ml += (size_t)n_;                                                               \
    } while (0)

    char found[512] = "";
    size_t fl = 0;
    if (d->platform == GS_PLAT_JETSON && !d->thor) {
        if (!dev_present(d, "/dev/nvmap"))
            MISSING("/dev/nvmap");
        int gpu = dev_present(d, "/dev/nvhost-ctrl-gpu") || dev_present(d, "/dev/nvgpu/igpu0/ctrl");
        if (!gpu)
            MISSING("/dev/nvhost-ctrl-gpu (or /dev/nvgpu/igpu0/ctrl)");
        snprintf(found, sizeof found, "/dev/nvmap, %s",
                 dev_present(d, "/dev/nvgpu/igpu0/ctrl") ? "/dev/nvgpu/igpu0/*" : "/dev/nvhost-*");
    } else {
        if (!dev_present(d, "/dev/nvidiactl"))
            MISSING("/dev/nvidiactl");
        char dev[PATH_MAX];
        int gpus = 0;
        DIR *dir = gs_doctor_path(d, "/dev", dev, sizeof dev) == 0 ? opendir(dev) : NULL;
        struct dirent *e;
        while (dir && (e = readdir(dir)) != NULL) {
            const char *n = e->d_name;
            if (strncmp(n, "nvidia", 6) || !n[6] || strspn(n + 6, "0123456789") != strlen(n + 6))
                continue;
            char abs[300];
            snprintf(abs, sizeof abs, "/dev/%s", n);
            if (!dev_present(d, abs))
                continue;
            gpus++;
            int w = snprintf(found + fl, sizeof found - fl, "%s%s", fl ? ", " : "", abs);
            if (w > 0 && (size_t)w < sizeof found - fl)
                fl += (size_t)w;
        }
        if (dir)
            closedir(dir);
        if (!gpus)
            MISSING("/dev/nvidia0 (no /dev/nvidiaN at all)");
        if (!dev_present(d, "/dev/nvidia-uvm"))
            uvm_missing = 1;
    }
#undef MISSING
    if (!ok) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "node.device-node-missing",
                          "GPU device nodes are missing: no container can reach the GPU");
        gs_finding_evidence(f, "missing under %s/dev: %s", d->root, missing);
        if (d->platform == GS_PLAT_JETSON && !d->thor)
            gs_finding_fix(f, "The nvgpu driver creates them at boot: run `sudo modprobe nvgpu`, "
                              "check `dmesg | grep -i nvgpu`, and reflash or reinstall the L4T "
                              "kernel (`sudo apt-get install --reinstall nvidia-l4t-kernel`) if it "
                              "fails to load.");
        else
            gs_finding_fix(f, "Load the driver and create the nodes: `sudo nvidia-modprobe -c=0` "
                              "(or `sudo modprobe nvidia`); if that fails, install the NVIDIA "
                              "driver matching this kernel and reboot.");
    } else {
        gs_report_add(d->rep, GS_SEV_OK, "node.device-nodes", "GPU device nodes present: %s",
                      found);
    }
    if (uvm_missing) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "node.nvidia-uvm-missing",
                          "/dev/nvidia-uvm is missing: CUDA fails with \"no CUDA-capable device\"");
        gs_finding_evidence(f,
                            "%s/dev/nvidia-uvm does not exist (the nvidia-uvm module is "
                            "loaded on demand, often not at all on headless nodes)",
                            d->root);
        gs_finding_fix(f, "Run `sudo nvidia-modprobe -u -c=0` (loads nvidia-uvm and creates "
                          "/dev/nvidia-uvm); to keep it across reboots add `nvidia-uvm` to "
                          "/etc/modules-load.d/nvidia.conf.");
    }
}

static void check_modules(struct gs_doctor *d, int l4t_major)
{
    char *mods = read_small(d, "/proc/modules", NULL);
    if (!mods) {
        gs_report_add(d->rep, GS_SEV_INFO, "node.kernel-modules-unknown",
                      "kernel modules not checked: %s/proc/modules is not readable", d->root);
        return;
    }
    const char *need[2] = {NULL, NULL};
    if (d->platform == GS_PLAT_JETSON && !d->thor) {
        /* L4T R32 builds nvgpu into the kernel; from R35 it is a module. */
        if (l4t_major == 0 || l4t_major >= 35)
            need[0] = "nvgpu";
    } else {
        need[0] = "nvidia";
        need[1] = "nvidia_uvm";
    }
    char missing[128] = "";
    for (int i = 0; i < 2; i++) {
        if (need[i] && !module_loaded(mods, need[i])) {
            size_t l = strlen(missing);
            snprintf(missing + l, sizeof missing - l, "%s%s", l ? ", " : "", need[i]);
        }
    }
    free(mods);
    if (!missing[0]) {
        gs_report_add(d->rep, GS_SEV_OK, "node.kernel-modules", "kernel modules loaded: %s%s%s",
                      need[0] ? need[0] : "(built in)", need[1] ? ", " : "",
                      need[1] ? need[1] : "");
        return;
    }
    struct gs_finding *f = gs_report_add(d->rep, GS_SEV_ERROR, "node.kernel-module-missing",
                                         "GPU kernel module not loaded: %s", missing);
    gs_finding_evidence(f, "%s is not listed in %s/proc/modules", missing, d->root);
    if (d->platform == GS_PLAT_JETSON && !d->thor)
        gs_finding_fix(f, "Run `sudo modprobe nvgpu` and read `dmesg | grep -i nvgpu` for the "
                          "reason it did not load at boot.");
    else
        gs_finding_fix(f, "Run `sudo modprobe nvidia && sudo nvidia-modprobe -u -c=0`; if "
                          "modprobe fails, the driver does not match the running kernel: "
                          "reinstall the NVIDIA driver (DKMS) and reboot.");
}

static void check_library(struct gs_doctor *d)
{
    static const char *const discrete[] = {"/usr/lib/x86_64-linux-gnu",
                                           "/usr/lib/aarch64-linux-gnu",
                                           "/usr/lib64",
                                           "/usr/lib",
                                           "/usr/local/nvidia/lib64",
                                           NULL};
    static const char *const jetson[] = {"/usr/lib/aarch64-linux-gnu/nvidia",
                                         "/usr/lib/aarch64-linux-gnu/tegra",
                                         "/usr/lib/aarch64-linux-gnu", NULL};
    const char *const *dirs = d->platform == GS_PLAT_JETSON ? jetson : discrete;
    char searched[512] = "";
    for (size_t i = 0; dirs[i]; i++) {
        char abs[256];
        snprintf(abs, sizeof abs, "%s/libcuda.so.1", dirs[i]);
        if (gs_doctor_exists(d, abs)) {
            gs_report_add(d->rep, GS_SEV_OK, "node.driver-library", "driver library found: %s",
                          abs);
            return;
        }
        size_t l = strlen(searched);
        snprintf(searched + l, sizeof searched - l, "%s%s", l ? ", " : "", dirs[i]);
    }
    struct gs_finding *f =
        gs_report_add(d->rep, GS_SEV_ERROR, "node.driver-library-missing",
                      "libcuda.so.1 not found: the runtime has no driver library to mount");
    gs_finding_evidence(f, "no libcuda.so.1 in %s (under %s)", searched,
                        d->root[0] ? d->root : "/");
    if (d->platform == GS_PLAT_JETSON)
        gs_finding_fix(f, "Install JetPack's CUDA driver package: `sudo apt-get install "
                          "nvidia-l4t-cuda` (JetPack 6 puts it in "
                          "/usr/lib/aarch64-linux-gnu/nvidia/).");
    else
        gs_finding_fix(f, "Install the driver's user-space libraries matching the kernel module "
                          "(Debian/Ubuntu: `sudo apt-get install libnvidia-compute-<major>`, "
                          "<major> from /proc/driver/nvidia/version), then `sudo ldconfig`.");
}

void gs_node_check(struct gs_doctor *d)
{
    check_meminfo(d);
    struct gs_finding *plat = NULL;
    int l4t_major = 0;
    if (detect_jetson(d, &plat)) {
        char *release = read_small(d, "/etc/nv_tegra_release", NULL);
        char ver[32];
        gs_inventory_l4t_version(release, ver, sizeof ver, &l4t_major);
        free(release);
    } else {
        char *ver = read_small(d, "/proc/driver/nvidia/version", NULL);
        int signs =
            ver || gs_doctor_exists(d, "/dev/nvidiactl") || gs_doctor_exists(d, "/dev/nvidia0");
        if (!signs) {
            char *mods = read_small(d, "/proc/modules", NULL);
            signs = mods && module_loaded(mods, "nvidia");
            free(mods);
        }
        if (!signs) {
            free(ver);
            struct gs_finding *f = gs_report_add(d->rep, GS_SEV_ERROR, "node.gpu-missing",
                                                 "no NVIDIA GPU found on this node");
            gs_finding_evidence(f,
                                "under %s: no /proc/driver/nvidia/version, no /dev/nvidiactl "
                                "or /dev/nvidia0, no /etc/nv_tegra_release, no tegra device tree",
                                d->root[0] ? d->root : "/");
            gs_finding_fix(f, "Install the NVIDIA driver (discrete GPU) or JetPack (Jetson) and "
                              "reboot; if this node has no GPU, do not run the gpuslice agent "
                              "on it (give the DaemonSet a nodeSelector).");
            return;
        }
        d->platform = GS_PLAT_DISCRETE;
        char line[200] = "";
        if (ver)
            first_line(ver, line, sizeof line);
        free(ver);
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_OK, "node.platform", "discrete NVIDIA GPU");
        if (line[0])
            gs_finding_evidence(f, "/proc/driver/nvidia/version: %s", line);
    }
    if (d->mem_total && plat) {
        char mem[32];
        snprintf(mem, sizeof mem, "%llu MiB", (unsigned long long)(d->mem_total >> 20));
        gs_finding_evidence(plat, "/proc/meminfo MemTotal: %s, shared by CPU and GPU", mem);
    }
    check_devices(d);
    check_modules(d, l4t_major);
    check_library(d);
}
