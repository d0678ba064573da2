/* Agent inventory and resources without hardware: the Tegra backend against
 * a fixture root made from real Orin Nano facts, the NVML backend against the
 * fake NVML ($GS_BUILD_DIR/sim/libnvidia-ml.so.1: GPUs, memory, XID events),
 * the resource arithmetic (context reserve, unit bound, replicas) and the
 * sharing-config and settings parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"
#include "contract/limits.h"
#include "contract/slice.h"

static char src_dir[1024], build_dir[1024];

static void fixture(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/tests/agent/fixtures/%s", src_dir, name);
}

static void defaults(struct gs_agent_config *c)
{
    gs_error err = {0};
    assert_int_equal(gs_agent_config_defaults(c, &err), 0);
}

static struct gs_inventory_opts opts_from(const struct gs_agent_config *c, enum gs_backend b,
                                          const char *root)
{
    struct gs_inventory_opts o = {.backend = b,
                                  .root = root,
                                  .sim_config = "",
                                  .nvml_library = c->nvml_library,
                                  .tegra_reserve_os = c->tegra_reserve_os,
                                  .tegra_reserve_k3s = c->tegra_reserve_k3s,
                                  .tegra_reserve_agent = c->tegra_reserve_agent};
    return o;
}

static void test_tegra_orin_nano(void **st)
{
    (void)st;
    char root[1200];
    fixture("orin-nano-8g", root, sizeof root);
    struct gs_agent_config c;
    defaults(&c);
    snprintf(c.nvml_library, sizeof c.nvml_library, "/nonexistent/libnvidia-ml.so.1");
    struct gs_inventory inv;
    gs_error err = {0};
    struct gs_inventory_opts o = opts_from(&c, GS_BACKEND_AUTO, root);
    int rc = gs_inventory_probe(&inv, &o, &err);
    if (rc)
        fail_msg("probe: %s", err.msg);
    assert_int_equal(inv.backend, GS_BACKEND_TEGRA); /* auto: Tegra files and no NVML */
    assert_int_equal(inv.ngpu, 1);
    assert_true(inv.gpu[0].integrated);
    assert_string_equal(inv.driver_version, "36.4.3"); /* L4T R36 REVISION 4.3 */
    assert_string_equal(inv.gpu[0].visible, "0");
    assert_non_null(strstr(inv.gpu[0].name, "tegra234"));
    assert_non_null(strstr(inv.model, "Orin Nano"));
    /* MemTotal 7620420 kB - (1 GiB OS + 1 GiB K3s + 64 MiB agent). */
    uint64_t want = 7620420ull * 1024 - (2ull << 30) - (64ull << 20);
    assert_int_equal(inv.gpu[0].memory, want);
    assert_non_null(strstr(inv.how, "MemTotal"));
    int nvmap = 0;
    for (int i = 0; i < inv.gpu[0].ndev; i++)
        nvmap |= !strcmp(inv.gpu[0].dev[i], "/dev/nvmap");
    assert_true(nvmap);
    assert_int_equal(inv.gpu[0].ndev, 7); /* only nodes present in the fixture */

    /* Worked example (docs/resources.md): 4 tenants x 256 MiB context. */
    c.max_slices_per_gpu = 4;
    struct gs_resources rs;
    rc = gs_resources_build(&rs, &inv, &c, NULL, &err);
    if (rc)
        fail_msg("resources: %s", err.msg);
    assert_int_equal(rs.context_reserve[0], 256ull << 20);
    assert_int_equal(rs.r[0].per_gpu[0], (int)((want - (1ull << 30)) / (256ull << 20)));
    assert_int_equal(rs.r[0].per_gpu[0], 16); /* 4 GiB of slices */
    gs_inventory_close(&inv);
}

static void test_tegra_reserves_too_big(void **st)
{
    (void)st;
    char root[1200];
    fixture("orin-nano-8g", root, sizeof root);
    struct gs_agent_config c;
    defaults(&c);
    c.tegra_reserve_os = 8ull << 30;
    struct gs_inventory inv;
    gs_error err = {0};
    struct gs_inventory_opts o = opts_from(&c, GS_BACKEND_TEGRA, root);
    assert_int_equal(gs_inventory_probe(&inv, &o, &err), GS_ERANGE);
    assert_non_null(strstr(err.msg, "tegra_reserve"));
}

static void test_auto_no_gpu(void **st)
{
    (void)st;
    char root[1200];
    fixture("x86-no-gpu", root, sizeof root);
    struct gs_agent_config c;
    defaults(&c);
    snprintf(c.nvml_library, sizeof c.nvml_library, "/nonexistent/libnvidia-ml.so.1");
    struct gs_inventory inv;
    gs_error err = {0};
    struct gs_inventory_opts o = opts_from(&c, GS_BACKEND_AUTO, root);
    assert_int_equal(gs_inventory_probe(&inv, &o, &err), GS_ENOENT);
    assert_non_null(strstr(err.msg, "--backend simulated"));
    o.backend = GS_BACKEND_TEGRA;
    assert_int_equal(gs_inventory_probe(&inv, &o, &err), GS_ENOENT);
}

static int nvml_probe(struct gs_inventory *inv, struct gs_agent_config *c, gs_error *err)
{
    snprintf(c->nvml_library, sizeof c->nvml_library, "%.200s/sim/libnvidia-ml.so.1", build_dir);
    if (access(c->nvml_library, R_OK) != 0)
        return 1;
    struct gs_inventory_opts o = opts_from(c, GS_BACKEND_AUTO, "");
    return gs_inventory_probe(inv, &o, err);
}

static void test_nvml_h200(void **st)
{
    (void)st;
    setenv("GS_FAKE_NVML_GPUS", "2", 1);
    setenv("GS_FAKE_NVML_MEM", "141Gi", 1);
    setenv("GS_FAKE_NVML_NAME", "NVIDIA H200", 1);
    struct gs_agent_config c;
    defaults(&c);
    struct gs_inventory inv;
    gs_error err = {0};
    int rc = nvml_probe(&inv, &c, &err);
    if (rc == 1)
        skip();
    if (rc)
        fail_msg("probe: %s", err.msg);
    assert_int_equal(inv.backend, GS_BACKEND_NVML);
    assert_int_equal(inv.ngpu, 2);
    assert_int_equal(inv.gpu[1].memory, 141ull << 30);
    assert_memory_equal(inv.gpu[0].uuid, "GPU-", 4);
    assert_string_not_equal(inv.gpu[0].uuid, inv.gpu[1].uuid);
    assert_string_equal(inv.gpu[0].visible, inv.gpu[0].uuid);
    assert_string_equal(inv.driver_version, "580.159.04"); /* nvmlSystemGetDriverVersion */

    /* 141 GiB at the default 256 MiB unit: (141 GiB - 8 x 608 MiB) / 256 MiB. */
    struct gs_resources rs;
    assert_int_equal(gs_resources_build(&rs, &inv, &c, NULL, &err), 0);
    assert_int_equal(rs.r[0].per_gpu[0], (141 * 4) - 19);
    /* 64 MiB: still under the 4096-unit bound, a ListAndWatch of ~100 KiB. */
    c.memory_unit = 64ull << 20;
    assert_int_equal(gs_resources_build(&rs, &inv, &c, NULL, &err), 0);
    assert_true(rs.r[0].per_gpu[0] <= 4096);
    /* 16 MiB would be 8960 units: refused with the unit to use instead. */
    c.memory_unit = 16ull << 20;
    assert_int_equal(gs_resources_build(&rs, &inv, &c, NULL, &err), GS_ERANGE);
    assert_non_null(strstr(err.msg, "raise memory_unit to at least 35 MiB"));
    gs_inventory_close(&inv);
}

static int wait_health(struct gs_inventory *inv, int gpu, int want)
{
    for (int i = 0; i < 100; i++) {
        if (atomic_load(&inv->gpu[gpu].healthy) == want)
            return 1;
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void test_nvml_xid_health(void **st)
{
    (void)st;
    char xid[] = "/tmp/gs-xid-XXXXXX";
    int fd = mkstemp(xid);
    assert_true(fd >= 0);
    close(fd);
    setenv("GS_FAKE_NVML_GPUS", "2", 1);
    setenv("GS_FAKE_NVML_MEM", "16Gi", 1);
    setenv("GS_FAKE_NVML_XID_FILE", xid, 1);
    struct gs_agent_config c;
    defaults(&c);
    struct gs_inventory inv;
    gs_error err = {0};
    int rc = nvml_probe(&inv, &c, &err);
    if (rc == 1) {
        unlink(xid);
        skip();
    }
    if (rc)
        fail_msg("probe: %s", err.msg);
    assert_int_equal(gs_inventory_nvml_watch_start(&inv, &err), 0);
    FILE *f = fopen(xid, "a");
    fprintf(f, "1 13\n"); /* application XID: ignored */
    fclose(f);
    struct timespec settle = {0, 300 * 1000 * 1000};
    nanosleep(&settle, NULL);
    assert_int_equal(atomic_load(&inv.gpu[1].healthy), 1);
    uint64_t gen = atomic_load(&inv.health_gen);
    f = fopen(xid, "a");
    fprintf(f, "1 79\n"); /* fell off the bus */
    fclose(f);
    assert_true(wait_health(&inv, 1, 0));
    assert_int_equal(atomic_load(&inv.gpu[0].healthy), 1);
    assert_int_equal(atomic_load(&inv.gpu[1].last_xid), 79);
    assert_true(atomic_load(&inv.health_gen) > gen);
    gs_inventory_close(&inv);
    unsetenv("GS_FAKE_NVML_XID_FILE");
    unlink(xid);
}

static void test_replica_math(void **st)
{
    (void)st;
    struct gs_agent_config c;
    defaults(&c);
    struct gs_inventory inv;
    gs_error err = {0};
    struct gs_inventory_opts o = opts_from(&c, GS_BACKEND_SIMULATED, "");
    assert_int_equal(gs_inventory_probe(&inv, &o, &err), 0);
    assert_true(inv.simulated);
    struct gs_sharing sh;
    const char *y = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                    "    - name: nvidia.com/gpu\n      replicas: 3\n      rename: gpu-third\n";
    assert_int_equal(gs_sharing_parse(y, strlen(y), "t", &sh, &err), 0);
    struct gs_resources rs;
    c.realtime_slots_per_gpu = 0;
    assert_int_equal(gs_resources_build(&rs, &inv, &c, &sh, &err), 0);
    assert_int_equal(rs.n, 1);
    assert_string_equal(rs.r[0].name, "gpu-third");
    assert_int_equal(rs.r[0].unit_pct, 33);
    assert_int_equal(rs.r[0].unit_bytes[0], ((16ull << 30) - 3 * (608ull << 20)) / 3);
    /* 64 replicas of a 16 GiB GPU with 608 MiB contexts do not fit. */
    y = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 64\n";
    assert_int_equal(gs_sharing_parse(y, strlen(y), "t", &sh, &err), 0);
    assert_int_equal(gs_resources_build(&rs, &inv, &c, &sh, &err), GS_ERANGE);
    assert_non_null(strstr(err.msg, "lower replicas or context_reserve"));
    /* IDs round-trip; near misses do not parse. */
    y = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
        "    - name: nvidia.com/gpu\n      replicas: 4\n";
    assert_int_equal(gs_sharing_parse(y, strlen(y), "t", &sh, &err), 0);
    assert_int_equal(gs_resources_build(&rs, &inv, &c, &sh, &err), 0);
    int g, u;
    assert_int_equal(gs_resources_parse_id(&rs.r[0], &inv, "SIM-GPU-0000::3", &g, &u), 0);
    assert_int_equal(u, 3);
    const char *bad[] = {"SIM-GPU-0000::4",
                         "SIM-GPU-0000::03",
                         "SIM-GPU-0000::",
                         "SIM-GPU-0001::0",
                         "::0",
                         "SIM-GPU-0000::-1",
                         "SIM-GPU-0000::1x",
                         ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (gs_resources_parse_id(&rs.r[0], &inv, bad[i], &g, &u) == 0)
            fail_msg("'%s' parsed", bad[i]);
}

static void sharing_rejects(const char *y, const char *needle)
{
    struct gs_sharing sh;
    gs_error err = {0};
    if (gs_sharing_parse(y, strlen(y), "cfg.yaml", &sh, &err) == 0)
        fail_msg("accepted:\n%s", y);
    if (!strstr(err.msg, needle))
        fail_msg("message '%s' lacks '%s'", err.msg, needle);
}

static void test_sharing_config(void **st)
{
    (void)st;
    struct gs_sharing sh;
    gs_error err = {0};
    const char *y = "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n"
                    "    renameByDefault: true\n    failRequestsGreaterThanOne: true\n"
                    "    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n";
    assert_int_equal(gs_sharing_parse(y, strlen(y), "t", &sh, &err), 0);
    assert_int_equal(sh.n, 1);
    assert_true(sh.rename_by_default);
    assert_true(sh.fail_requests_greater_than_one);
    assert_int_equal(sh.res[0].replicas, 10);
    sharing_rejects("version: v2\nsharing: {}\n", "version");
    sharing_rejects("version: v1\n", "sharing");
    sharing_rejects("version: v1\nsharing:\n  mps:\n    resources: []\n", "sharing.mps.resources");
    sharing_rejects("version: v1\nsharing:\n  mps: {}\n  timeSlicing: {}\n", "keep one");
    sharing_rejects("version: v1\nsharing:\n  other: {}\n", "sharing.timeSlicing");
    y = "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n"
        "      replicas: 4\n";
    assert_int_equal(gs_sharing_parse(y, strlen(y), "t", &sh, &err), 0);
    assert_true(sh.mps);
    assert_int_equal(sh.res[0].replicas, 4);
    sharing_rejects("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", "at least one");
    sharing_rejects("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: x\n"
                    "      replicas: 0\n",
                    "1 to 256");
    sharing_rejects("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                    "    - name: nvidia.com/mig-1g.10gb\n      replicas: 2\n",
                    "MIG");
    sharing_rejects("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: maybe\n",
                    "true or false");
    sharing_rejects("version: [v1\n", "not valid YAML");
    sharing_rejects("- a\n- b\n", "not a YAML mapping");
}

static void test_settings(void **st)
{
    (void)st;
    struct gs_agent_config c;
    defaults(&c);
    gs_error err = {0};
    char *argv[] = {"agent",   "--backend", "tegra", "--memory-unit=64Mi", "--device-list-strategy",
                    "cdi-cri", NULL};
    assert_int_equal(gs_agent_config_parse_args(&c, 6, argv, &err), 0);
    assert_int_equal(c.backend, GS_BACKEND_TEGRA);
    assert_int_equal(c.memory_unit, 64ull << 20);
    assert_int_equal(c.device_list_strategy, GS_DLS_CDI_CRI);
    char *bad1[] = {"agent", "--memory-unit", "1k", NULL};
    assert_int_not_equal(gs_agent_config_parse_args(&c, 3, bad1, &err), 0);
    assert_non_null(strstr(err.msg, "memory_unit"));
    char *bad2[] = {"agent", "--no-such", "1", NULL};
    assert_int_not_equal(gs_agent_config_parse_args(&c, 3, bad2, &err), 0);
    assert_non_null(strstr(err.msg, "unknown setting"));
    char *bad3[] = {"agent", "--backend", NULL};
    assert_int_not_equal(gs_agent_config_parse_args(&c, 2, bad3, &err), 0);
    uint64_t r;
    snprintf(c.context_reserve, sizeof c.context_reserve, "auto");
    assert_int_equal(gs_agent_config_context_reserve(&c, 1, &r, &err), 0);
    assert_int_equal(r, 256ull << 20);
    snprintf(c.context_reserve, sizeof c.context_reserve, "600Mi");
    assert_int_equal(gs_agent_config_context_reserve(&c, 0, &r, &err), 0);
    assert_int_equal(r, 600ull << 20);
    snprintf(c.context_reserve, sizeof c.context_reserve, "lots");
    assert_int_not_equal(gs_agent_config_context_reserve(&c, 0, &r, &err), 0);
}

static void test_standalone_slice(void **st)
{
    (void)st;
    struct gs_agent_config c;
    defaults(&c);
    c.backend = GS_BACKEND_SIMULATED;
    char dir[] = "/tmp/gs-run-XXXXXX";
    assert_non_null(mkdtemp(dir));
    snprintf(c.state_root, sizeof c.state_root, "%s", dir);
    struct gs_limits l;
    struct gs_slice_paths p;
    gs_error err = {0};
    int rc = gs_resources_standalone_slice(&c, 2ull << 30, 30, 0, "run-1", &l, &p, &err);
    if (rc)
        fail_msg("%s", err.msg);
    struct gs_limits back;
    assert_int_equal(gs_limits_load(p.limits, &back, &err), 0);
    assert_int_equal(back.memory, 2ull << 30);
    assert_int_equal(back.compute, 30);
    assert_int_equal(back.context_reserve, 608ull << 20);
    assert_true(back.simulated);
    /* The defaults on time-slicing: a best-effort slice gates with the guard
     * at 600 us and no prime; a critical one primes at 250 us, no guard; under
     * MPS a critical slice has nothing to prime. */
    assert_int_equal(back.guard_us, GS_GUARD_DEFAULT_US);
    assert_int_equal(back.guard_us, 600);
    assert_int_equal(back.prime_us, 0);
    assert_int_equal(gs_resources_standalone_slice(&c, 1ull << 30, 0, 1, "run-3", &l, &p, &err), 0);
    assert_int_equal(l.prime_us, GS_PRIME_DEFAULT_US);
    assert_int_equal(l.prime_us, 250);
    assert_int_equal(l.guard_us, 0);
    assert_int_equal(gs_slice_remove(dir, "run-3", &err), 0);
    c.compute_sharing = GS_SHARING_MPS;
    assert_int_equal(gs_resources_standalone_slice(&c, 1ull << 30, 0, 1, "run-4", &l, &p, &err), 0);
    assert_int_equal(l.prime_us, 0);
    assert_int_equal(gs_slice_remove(dir, "run-4", &err), 0);
    c.compute_sharing = GS_SHARING_TIMESLICE;
    /* 16 GiB - 8 x 608 MiB = 11.25 GiB on offer: 13 GiB does not fit. */
    assert_int_equal(gs_resources_standalone_slice(&c, 13ull << 30, 30, 0, "run-2", &l, &p, &err),
                     GS_ERANGE);
    assert_non_null(strstr(err.msg, "ask for less"));
    assert_int_equal(gs_slice_remove(dir, "run-1", &err), 0);
    rmdir(dir);
}

int main(void)
{
    const char *s = getenv("GS_SRC_DIR"), *b = getenv("GS_BUILD_DIR");
    snprintf(src_dir, sizeof src_dir, "%s", s ? s : ".");
    snprintf(build_dir, sizeof build_dir, "%s", b ? b : "build");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tegra_orin_nano),  cmocka_unit_test(test_tegra_reserves_too_big),
        cmocka_unit_test(test_auto_no_gpu),      cmocka_unit_test(test_nvml_h200),
        cmocka_unit_test(test_nvml_xid_health),  cmocka_unit_test(test_replica_math),
        cmocka_unit_test(test_sharing_config),   cmocka_unit_test(test_settings),
        cmocka_unit_test(test_standalone_slice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
