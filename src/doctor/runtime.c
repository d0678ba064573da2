/* Container runtime checks: is an nvidia runtime handler configured in the
 * containerd that the kubelet actually talks to, is it the default, is CDI on
 * and are there CDI specs, is nvidia-container-runtime's mode right for this
 * GPU (docs/doctor.md).
 *
 * Which file counts: K3s regenerates agent/etc/containerd/config.toml at every
 * start (from config-v3.toml.tmpl or config.toml.tmpl when present) and never
 * reads /etc/containerd/, which is where `nvidia-ctk runtime configure` writes.
 * Plain containerd reads /etc/containerd/config.toml plus its `imports`;
 * containerd merges an import one whole plugin table at a time, so a lookup
 * under plugins.<id> reads only the last file that has that plugin. */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "doctor/cdi.h"
#include "doctor/doctor.h"
#include "doctor/toml.h"

#define MAX_FILES 32
#define K3S_CONTAINERD "/var/lib/rancher/k3s/agent/etc/containerd"

struct cfgset {
    struct gs_toml *doc[MAX_FILES];
    char shown[MAX_FILES][PATH_MAX]; /* path on the node (root left out) */
    size_t n;
    long long version; /* top-level "version", 0 when absent */
    const char *cri;   /* the CRI plugin id in use */
};

static void cfgset_free(struct cfgset *s)
{
    for (size_t i = 0; i < s->n; i++)
        gs_toml_free(s->doc[i]);
    s->n = 0;
}

/* Loads one file (host path abs) into the set. Returns 0, GS_ENOENT when
 * missing, or another negative code with a finding already added. */
static int load_file(struct gs_doctor *d, struct cfgset *s, const char *abs, int tmpl)
{
    char p[PATH_MAX];
    char *text = NULL;
    size_t len = 0;
    gs_error err = {0};
    if (s->n >= MAX_FILES)
        return 0;
    if (gs_doctor_path(d, abs, p, sizeof p) != 0)
        return GS_ENOENT;
    int rc = gs_file_read(p, 4u << 20, &text, &len, &err);
    if (rc == GS_ENOENT)
        return rc;
    struct gs_toml *t = NULL;
    if (rc == 0) {
        struct gs_toml_opts o = {.templates = tmpl};
        rc = gs_toml_parse(text, len, abs, &o, &t, &err);
    }
    free(text);
    if (rc < 0) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_ERROR, "runtime.config-unparsable",
                                             "containerd configuration %s cannot be read", abs);
        gs_finding_evidence(f, "%s", err.msg);
        gs_finding_fix(f,
                       "Correct the file at the line named above (containerd refuses to start "
                       "with it, or ignores it); check with `containerd config dump`%s.",
                       d->k3s ? " or the log /var/lib/rancher/k3s/agent/containerd/containerd.log"
                              : "");
        return rc;
    }
    s->doc[s->n] = t;
    snprintf(s->shown[s->n], sizeof s->shown[s->n], "%s", abs);
    s->n++;
    return 0;
}

/* Loads main and the files its top-level `imports` names (globs, relative to main's folder). */
static int load_config(struct gs_doctor *d, struct cfgset *s, const char *main_abs, int tmpl)
{
    int rc = load_file(d, s, main_abs, tmpl);
    if (rc < 0)
        return rc;
    static const char *const vkey[] = {"version"};
    const struct gs_toml_entry *v = gs_toml_get(s->doc[0], vkey, 1);
    s->version = v && v->type == GS_TOML_INT ? v->integer : 0;
    static const char *const ikey[] = {"imports"};
    const struct gs_toml_entry *imp = gs_toml_get(s->doc[0], ikey, 1);
    for (size_t i = 0; imp && imp->type == GS_TOML_ARRAY && i < imp->nitems; i++) {
        char pat[PATH_MAX], dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", main_abs);
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = '\0';
        const char *item = imp->items[i];
        int n = item[0] == '/' ? snprintf(pat, sizeof pat, "%s%s", d->root, item)
                               : snprintf(pat, sizeof pat, "%s%s/%s", d->root, dir, item);
        if (n < 0 || (size_t)n >= sizeof pat)
            continue;
        glob_t g;
        if (glob(pat, 0, NULL, &g) != 0)
            continue;
        for (size_t k = 0; k < g.gl_pathc; k++) {
            const char *abs = g.gl_pathv[k] + strlen(d->root);
            if (load_file(d, s, abs, 0) < 0) {
                globfree(&g);
                return GS_EINVAL;
            }
        }
        globfree(&g);
    }
    return 0;
}

/* The document that holds plugins.<cri> (the last one that has any key of it). */
static const struct gs_toml *cri_doc(const struct cfgset *s, const char *cri)
{
    const char *pre[] = {"plugins", cri};
    for (size_t i = s->n; i-- > 0;)
        for (size_t k = 0; k < s->doc[i]->n; k++)
            if (gs_toml_has_prefix(&s->doc[i]->e[k], pre, 2))
                return s->doc[i];
    return NULL;
}

static const char *cri_file(const struct cfgset *s, const struct gs_toml *t)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->doc[i] == t)
            return s->shown[i];
    return "?";
}

/* Picks the CRI plugin id: the one the files use, else the one the version implies. */
static void pick_cri(struct cfgset *s)
{
    static const char *const ids[] = {"io.containerd.cri.v1.runtime", "io.containerd.grpc.v1.cri",
                                      "cri"};
    for (size_t i = 0; i < 3; i++) {
        if (cri_doc(s, ids[i])) {
            s->cri = ids[i];
            return;
        }
    }
    s->cri = s->version >= 3 ? ids[0] : ids[1];
}

/* Table header text for a key under the CRI plugin, in the file's own quoting style. */
static void header(const struct cfgset *s, const char *rest, char *buf, size_t len)
{
    if (s->version >= 3)
        snprintf(buf, len, "[plugins.'%s'%s%s]", s->cri, rest[0] ? "." : "", rest);
    else
        snprintf(buf, len, "[plugins.\"%s\"%s%s]", s->cri, rest[0] ? "." : "", rest);
}

struct handler {
    char name[64];
    char binary[PATH_MAX];
    const char *file;
    int line;
};

static int is_nvidia(const char *name, const char *binary)
{
    return !strncmp(name, "nvidia", 6) || (binary && strstr(binary, "nvidia-container-runtime"));
}

/* Collects runtimes under plugins.<cri>.containerd.runtimes; nvidia ones only when only_nvidia. */
static size_t find_handlers(const struct cfgset *s, const struct gs_toml *t, struct handler *out,
                            size_t max)
{
    size_t n = 0;
    const char *pre[] = {"plugins", s->cri, "containerd", "runtimes", "*"};
    for (size_t k = 0; t && k < t->n; k++) {
        const struct gs_toml_entry *e = &t->e[k];
        if (!gs_toml_has_prefix(e, pre, 5))
            continue;
        const char *name = e->key[4];
        size_t i;
        for (i = 0; i < n; i++)
            if (!strcmp(out[i].name, name))
                break;
        if (i == n) {
            if (n == max)
                continue;
            memset(&out[n], 0, sizeof out[n]);
            snprintf(out[n].name, sizeof out[n].name, "%s", name);
            out[n].file = cri_file(s, t);
            out[n].line = e->line;
            n++;
        }
        if (e->depth == 7 && !strcmp(e->key[5], "options") && !strcmp(e->key[6], "BinaryName") &&
            e->type == GS_TOML_STRING)
            snprintf(out[i].binary, sizeof out[i].binary, "%s", e->str);
    }
    return n;
}

/* Looks for an nvidia runtime in files this containerd does not read. */
static int stray_nvidia(struct gs_doctor *d, const struct cfgset *used, char *where, size_t len)
{
    static const char *const pats[] = {"/etc/containerd/config.toml",
                                       "/etc/containerd/conf.d/*.toml",
                                       K3S_CONTAINERD "/config.toml.d/*.toml"};
    where[0] = '\0';
    for (size_t i = 0; i < 3; i++) {
        char pat[PATH_MAX];
        if (gs_doctor_path(d, pats[i], pat, sizeof pat) != 0)
            continue;
        glob_t g;
        if (glob(pat, 0, NULL, &g) != 0)
            continue;
        for (size_t k = 0; k < g.gl_pathc; k++) {
            const char *abs = g.gl_pathv[k] + strlen(d->root);
            int read = 0;
            for (size_t u = 0; u < used->n; u++)
                read = read || !strcmp(used->shown[u], abs);
            if (read)
                continue;
            char *text = NULL;
            size_t tl = 0;
            if (gs_file_read(g.gl_pathv[k], 1u << 20, &text, &tl, NULL) != 0)
                continue;
            if (strstr(text, "runtimes.nvidia") || strstr(text, "runtimes.\"nvidia\"") ||
                strstr(text, "runtimes.'nvidia'") || strstr(text, "nvidia-container-runtime")) {
                size_t l = strlen(where);
                snprintf(where + l, len - l, "%s%s", l ? ", " : "", abs);
            }
            free(text);
        }
        globfree(&g);
    }
    return where[0] != '\0';
}

static const char *toolkit_binary(struct gs_doctor *d)
{
    static const char *const bins[] = {"/usr/bin/nvidia-container-runtime",
                                       "/usr/local/bin/nvidia-container-runtime",
                                       "/usr/local/nvidia/toolkit/nvidia-container-runtime",
                                       "/usr/sbin/nvidia-container-runtime", NULL};
    for (size_t i = 0; bins[i]; i++)
        if (gs_doctor_exists(d, bins[i]))
            return bins[i];
    return NULL;
}

static const char *k3s_service(struct gs_doctor *d)
{
    return gs_doctor_exists(d, "/etc/systemd/system/k3s-agent.service") ? "k3s-agent" : "k3s";
}

static void restart_fix(struct gs_doctor *d, struct gs_finding *f)
{
    if (d->k3s)
        gs_finding_fix(f,
                       "Then restart K3s so it regenerates its containerd config: "
                       "`sudo systemctl restart %s`.",
                       k3s_service(d));
    else
        gs_finding_fix(f, "Then restart containerd: `sudo systemctl restart containerd`.");
}

static void check_handlers(struct gs_doctor *d, const struct cfgset *s, const char *main_shown)
{
    const struct gs_toml *t = cri_doc(s, s->cri);
    struct handler h[16];
    size_t n = find_handlers(s, t, h, 16), nv = 0;
    for (size_t i = 0; i < n; i++) {
        if (!is_nvidia(h[i].name, h[i].binary))
            continue;
        size_t l = strlen(d->handlers);
        snprintf(d->handlers + l, sizeof d->handlers - l, "%s%s", l ? "," : "", h[i].name);
        nv++;
        if (h[i].binary[0] && !gs_doctor_exists(d, h[i].binary)) {
            struct gs_finding *f = gs_report_add(
                d->rep, GS_SEV_ERROR, "runtime.nvidia-binary-missing",
                "runtime handler '%s' points at %s, which does not exist", h[i].name, h[i].binary);
            gs_finding_evidence(f, "%s:%d: BinaryName = \"%s\"", h[i].file, h[i].line, h[i].binary);
            gs_finding_fix(f, "Install the NVIDIA Container Toolkit (`sudo apt-get install "
                              "nvidia-container-toolkit`) or point BinaryName at where "
                              "nvidia-container-runtime is installed.");
            restart_fix(d, f);
            continue;
        }
        d->nvidia_handler = 1;
    }
    if (d->nvidia_handler) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_OK, "runtime.nvidia-handler",
                                             "nvidia runtime handler configured: %s", d->handlers);
        gs_finding_evidence(f, "in %s", t ? cri_file(s, t) : main_shown);
        return;
    }
    if (nv) /* defined but broken: reported above */
        return;
    char where[1024];
    char hdr[200];
    header(s, "containerd.runtimes.\"nvidia\"", hdr, sizeof hdr);
    if (s->version >= 3)
        header(s, "containerd.runtimes.'nvidia'", hdr, sizeof hdr);
    const char *bin = toolkit_binary(d);
    struct gs_finding *f;
    if (stray_nvidia(d, s, where, sizeof where)) {
        f = gs_report_add(d->rep, GS_SEV_ERROR, "runtime.nvidia-config-wrong-file",
                          "the nvidia runtime is configured in a file this containerd does not "
                          "read: Pods run without the GPU and fall back to the CPU");
        gs_finding_evidence(f, "nvidia runtime found in: %s", where);
        gs_finding_evidence(f, "containerd reads: %s; it has no %s", main_shown, hdr);
        if (d->k3s) {
            gs_finding_evidence(f, "K3s runs its own containerd and never reads /etc/containerd/ "
                                   "(where `nvidia-ctk runtime configure` writes)");
            if (bin)
                gs_finding_fix(f,
                               "K3s adds the nvidia handler itself when it finds %s at start: "
                               "`sudo systemctl restart %s`, then check with `grep nvidia %s/"
                               "config.toml`.",
                               bin, k3s_service(d), K3S_CONTAINERD);
            else
                gs_finding_fix(f,
                               "Install the NVIDIA Container Toolkit (`sudo apt-get install "
                               "nvidia-container-toolkit`), then `sudo systemctl restart %s`: "
                               "K3s adds the nvidia handler itself when it finds the binary.",
                               k3s_service(d));
        } else {
            gs_finding_fix(f,
                           "Add `imports = [\"/etc/containerd/conf.d/*.toml\"]` at the top of "
                           "%s (or rerun `sudo nvidia-ctk runtime configure "
                           "--runtime=containerd --config=%s`).",
                           main_shown, main_shown);
            restart_fix(d, f);
        }
        return;
    }
    f = gs_report_add(d->rep, GS_SEV_ERROR, "runtime.nvidia-handler-missing",
                      "no nvidia runtime handler in containerd: Pods run under runc without the "
                      "GPU and fall back to the CPU");
    gs_finding_evidence(f, "%s has no %s", main_shown, hdr);
    if (bin)
        gs_finding_evidence(f, "%s is installed", bin);
    else
        gs_finding_evidence(f, "nvidia-container-runtime is not installed (looked in /usr/bin, "
                               "/usr/local/bin, /usr/local/nvidia/toolkit)");
    if (d->k3s) {
        if (bin)
            gs_finding_fix(f,
                           "The toolkit was installed after K3s started (K3s looks for it "
                           "only at start): `sudo systemctl restart %s`.",
                           k3s_service(d));
        else
            gs_finding_fix(f,
                           "`sudo apt-get install nvidia-container-toolkit`, then `sudo "
                           "systemctl restart %s` (K3s adds the nvidia handler when it finds "
                           "the binary at start).",
                           k3s_service(d));
    } else {
        if (!bin)
            gs_finding_fix(f, "`sudo apt-get install nvidia-container-toolkit`.");
        gs_finding_fix(f,
                       "`sudo nvidia-ctk runtime configure --runtime=containerd "
                       "--config=%s`, which adds %s with options.BinaryName = "
                       "\"/usr/bin/nvidia-container-runtime\".",
                       main_shown, hdr);
        restart_fix(d, f);
    }
}

static void check_default(struct gs_doctor *d, const struct cfgset *s)
{
    const struct gs_toml *t = cri_doc(s, s->cri);
    const char *key[] = {"plugins", s->cri, "containerd", "default_runtime_name"};
    const char *def = gs_toml_get_str(t, key, 4);
    if (!def)
        def = "runc";
    char list[sizeof d->handlers + 2];
    snprintf(list, sizeof list, ",%s,", d->handlers);
    char needle[80];
    snprintf(needle, sizeof needle, ",%s,", def);
    if (d->nvidia_handler && strstr(list, needle)) {
        d->default_nvidia = 1;
        gs_report_add(d->rep, GS_SEV_OK, "runtime.default-runtime",
                      "default runtime is %s: Pods need no runtimeClassName", def);
        return;
    }
    struct gs_finding *f = gs_report_add(d->rep, GS_SEV_INFO, "runtime.default-not-nvidia",
                                         "default runtime is %s: GPU Pods must set "
                                         "runtimeClassName: " GS_RUNTIME_CLASS,
                                         def);
    gs_finding_evidence(f, "default_runtime_name = \"%s\"%s", def,
                        gs_toml_get_str(t, key, 4) ? "" : " (containerd's default)");
    if (d->k3s)
        gs_finding_fix(f,
                       "Either set runtimeClassName: nvidia in every GPU Pod, or make nvidia "
                       "the default: add the line `default-runtime: nvidia` to "
                       "/etc/rancher/k3s/config.yaml and `sudo systemctl restart %s`.",
                       k3s_service(d));
    else
        gs_finding_fix(f, "Either set runtimeClassName: nvidia in every GPU Pod, or make nvidia "
                          "the default: `sudo nvidia-ctk runtime configure --runtime=containerd "
                          "--set-as-default` and `sudo systemctl restart containerd`.");
}

static void check_cdi(struct gs_doctor *d, const struct cfgset *s)
{
    const struct gs_toml *t = cri_doc(s, s->cri);
    const char *ekey[] = {"plugins", s->cri, "enable_cdi"};
    const struct gs_toml_entry *en = gs_toml_get(t, ekey, 3);
    /* containerd 2.x (config version 3) turned CDI on by default; 1.7 has it off */
    d->cdi_enabled = en && en->type == GS_TOML_BOOL ? en->boolean : s->version >= 3;
    const char *dkey[] = {"plugins", s->cri, "cdi_spec_dirs"};
    const struct gs_toml_entry *dirs = gs_toml_get(t, dkey, 3);
    static char *const defdirs[] = {"/etc/cdi", "/var/run/cdi"};
    struct gs_cdi_scan scan;
    if (dirs && dirs->type == GS_TOML_ARRAY && dirs->nitems)
        gs_cdi_scan(d, dirs->items, dirs->nitems, &scan);
    else
        gs_cdi_scan(d, defdirs, 2, &scan);
    d->cdi_nvidia_spec = scan.nvidia;
    if (scan.invalid[0]) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_WARN, "runtime.cdi-spec-invalid",
                                             "a CDI spec cannot be read; containerd skips it");
        gs_finding_evidence(f, "%s", scan.invalid);
        gs_finding_fix(f, "Regenerate it: `sudo nvidia-ctk cdi generate "
                          "--output=/etc/cdi/nvidia.yaml`, or remove the broken file.");
    }
    if (!d->cdi_enabled) {
        char hdr[200];
        header(s, "", hdr, sizeof hdr);
        struct gs_finding *f = gs_report_add(
            d->rep, GS_SEV_INFO, "runtime.cdi-disabled",
            "CDI is off in containerd: devices reach containers only through the nvidia runtime");
        gs_finding_evidence(f, "%s: enable_cdi is %s", en ? cri_file(s, t) : "containerd 1.7",
                            en ? "false" : "not set (off by default before containerd 2.0)");
        if (d->k3s)
            gs_finding_fix(f,
                           "To turn it on: copy %s/config.toml to %s/config.toml.tmpl, add "
                           "`enable_cdi = true` under its %s table, and `sudo systemctl "
                           "restart %s`.",
                           K3S_CONTAINERD, K3S_CONTAINERD, hdr, k3s_service(d));
        else
            gs_finding_fix(f,
                           "To turn it on: add `enable_cdi = true` under %s in "
                           "/etc/containerd/config.toml and `sudo systemctl restart "
                           "containerd`.",
                           hdr);
    } else if (scan.nvidia) {
        struct gs_finding *f = gs_report_add(d->rep, GS_SEV_OK, "runtime.cdi-spec",
                                             "CDI is on and specs name the GPU");
        gs_finding_evidence(f, "%s", scan.devices);
    } else {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_WARN, "runtime.cdi-spec-missing",
                          "CDI is on but no spec of kind nvidia.com/gpu: CDI device names "
                          "(nvidia.com/gpu=0) cannot be resolved");
        gs_finding_evidence(f, "looked in %s: %s", scan.searched,
                            scan.devices[0] ? scan.devices : "no specs");
        gs_finding_fix(f,
                       "`sudo nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml`%s; "
                       "check with `nvidia-ctk cdi list`.",
                       d->platform == GS_PLAT_JETSON ? " (on Jetson it uses CSV mode)" : "");
    }
    if (scan.stale[0]) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_WARN, "runtime.cdi-spec-stale",
                          "a CDI spec names device nodes this node does not have (an old "
                          "driver's spec?): containers using it fail to start");
        gs_finding_evidence(f, "%s", scan.stale);
        gs_finding_fix(f, "Regenerate the spec for the installed driver: `sudo nvidia-ctk cdi "
                          "generate --output=/etc/cdi/nvidia.yaml`.");
    }
}

/* /etc/nvidia-container-runtime/config.toml: the mode must suit the GPU. */
static void check_toolkit_mode(struct gs_doctor *d)
{
    const char *abs = "/etc/nvidia-container-runtime/config.toml";
    struct cfgset s = {0};
    if (load_file(d, &s, abs, 0) != 0 || s.n == 0)
        return;
    static const char *const key[] = {"nvidia-container-runtime", "mode"};
    const char *mode = gs_toml_get_str(s.doc[0], key, 2);
    const struct gs_toml_entry *e = gs_toml_get(s.doc[0], key, 2);
    int line = e ? e->line : 0;
    const char *want = NULL, *why = NULL;
    int jetson_igpu = d->platform == GS_PLAT_JETSON && !d->thor;
    if (mode && !strcmp(mode, "legacy") && jetson_igpu) {
        want = "csv";
        why = "legacy mode needs NVML, which the Jetson iGPU (nvgpu) does not have: no device "
              "reaches the container";
    } else if (mode && !strcmp(mode, "csv") && d->platform == GS_PLAT_DISCRETE) {
        want = "auto";
        why = "csv mode mounts the Jetson file lists, not a discrete GPU's driver";
    } else if (mode && !strcmp(mode, "cdi") && !d->cdi_nvidia_spec) {
        want = "auto";
        why = "cdi mode needs a CDI spec, and none of kind nvidia.com/gpu was found";
    }
    if (want) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_ERROR, "runtime.toolkit-mode-wrong",
                          "nvidia-container-runtime mode \"%s\" does not suit this GPU", mode);
        gs_finding_evidence(f, "%s:%d: mode = \"%s\"", abs, line, mode);
        gs_finding_evidence(f, "%s", why);
        gs_finding_fix(f,
                       "`sudo nvidia-ctk config --in-place --set "
                       "nvidia-container-runtime.mode=%s`.",
                       want);
    } else if (jetson_igpu && d->nvidia_handler && !d->cdi_nvidia_spec) {
        /* csv (or auto, which is csv on Tegra) mode reads the file lists */
        char dir[PATH_MAX];
        glob_t g;
        int have = 0;
        if (gs_doctor_path(d, "/etc/nvidia-container-runtime/host-files-for-container.d/*.csv", dir,
                           sizeof dir) == 0 &&
            glob(dir, 0, NULL, &g) == 0) {
            have = g.gl_pathc > 0;
            globfree(&g);
        }
        if (!have) {
            struct gs_finding *f = gs_report_add(
                d->rep, GS_SEV_ERROR, "runtime.toolkit-csv-missing",
                "no CSV file lists on this Jetson: the nvidia runtime mounts nothing");
            gs_finding_evidence(f, "/etc/nvidia-container-runtime/host-files-for-container.d/ "
                                   "has no *.csv (devices.csv, drivers.csv, l4t.csv)");
            gs_finding_fix(f, "Reinstall JetPack's container support: `sudo apt-get install "
                              "--reinstall nvidia-container`, or use CDI: `sudo nvidia-ctk cdi "
                              "generate --mode=csv --output=/etc/cdi/nvidia.yaml`.");
        }
    }
    cfgset_free(&s);
}

/* K3s: the generated config and the templates it is made from. */
static int load_k3s(struct gs_doctor *d, struct cfgset *s, const char **shown)
{
    static const char *const gen = K3S_CONTAINERD "/config.toml";
    static const char *const tmpls[] = {K3S_CONTAINERD "/config-v3.toml.tmpl",
                                        K3S_CONTAINERD "/config.toml.tmpl"};
    const char *tmpl = NULL;
    for (size_t i = 0; i < 2 && !tmpl; i++)
        if (gs_doctor_exists(d, tmpls[i]))
            tmpl = tmpls[i];
    *shown = gen;
    int rc = load_config(d, s, gen, 0);
    if (rc == GS_ENOENT) {
        struct gs_finding *f =
            gs_report_add(d->rep, tmpl ? GS_SEV_WARN : GS_SEV_ERROR, "runtime.k3s-config-missing",
                          "K3s has not generated its containerd config");
        gs_finding_evidence(f, "%s does not exist%s%s", gen, tmpl ? "; checking the template " : "",
                            tmpl ? tmpl : "");
        gs_finding_fix(f,
                       "Start K3s (`sudo systemctl start %s`) and read `journalctl -u %s` if it "
                       "does not come up.",
                       k3s_service(d), k3s_service(d));
        if (!tmpl)
            return GS_ENOENT;
        *shown = tmpl;
        return load_config(d, s, tmpl, 1);
    }
    if (rc < 0 || !tmpl)
        return rc;
    char a[PATH_MAX], b[PATH_MAX];
    struct stat sa, sb;
    if (gs_doctor_path(d, tmpl, a, sizeof a) == 0 && gs_doctor_path(d, gen, b, sizeof b) == 0 &&
        stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_mtime > sb.st_mtime) {
        struct gs_finding *f =
            gs_report_add(d->rep, GS_SEV_WARN, "runtime.template-newer",
                          "the containerd template changed after K3s generated its config");
        gs_finding_evidence(f, "%s is newer than %s: the change is not in effect", tmpl, gen);
        gs_finding_fix(f, "`sudo systemctl restart %s`.", k3s_service(d));
    }
    return 0;
}

void gs_runtime_check(struct gs_doctor *d)
{
    d->k3s = gs_doctor_exists(d, "/var/lib/rancher/k3s") ||
             gs_doctor_exists(d, "/etc/rancher/k3s/config.yaml");
    struct cfgset s = {0};
    const char *shown = "/etc/containerd/config.toml";
    int rc;
    if (d->k3s) {
        rc = load_k3s(d, &s, &shown);
    } else {
        rc = load_config(d, &s, shown, 0);
        if (rc == GS_ENOENT) {
            if (!gs_doctor_exists(d, "/usr/bin/containerd") &&
                !gs_doctor_exists(d, "/usr/local/bin/containerd")) {
                struct gs_finding *f =
                    gs_report_add(d->rep, GS_SEV_WARN, "runtime.not-found",
                                  "no K3s and no containerd found: the runtime checks did not run");
                gs_finding_evidence(f,
                                    "none of /var/lib/rancher/k3s, /etc/containerd/config.toml, "
                                    "/usr/bin/containerd under %s",
                                    d->root[0] ? d->root : "/");
                gs_finding_fix(f, "Install K3s (`curl -sfL https://get.k3s.io | sh -`) or point "
                                  "--root at the node's root file system.");
                return;
            }
            rc = 0; /* containerd with its built-in defaults: no nvidia handler */
        }
    }
    if (rc < 0) {
        cfgset_free(&s);
        return;
    }
    d->runtime_found = 1;
    pick_cri(&s);
    check_handlers(d, &s, shown);
    check_default(d, &s);
    check_cdi(d, &s);
    check_toolkit_mode(d);
    cfgset_free(&s);
}
