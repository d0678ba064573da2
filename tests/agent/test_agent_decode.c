/* Every decoder path of the agent fed random and mutated bytes: the five
 * DevicePlugin handlers of every resource (fractional and replica), the
 * PodResources reclaim, the sharing-config YAML and device-ID parsing. Each
 * input must be answered with a clean gRPC status (and a message when not
 * OK) or a negative code, never a crash, a leak or undefined behaviour (the
 * ASan+UBSan build runs this too). GS_FUZZ_ITERS scales it; the seed is fixed
 * (GS_FUZZ_SEED changes it) so a failure replays. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testrng.h"

#include "node/agent_config.h"
#include "node/inventory.h"
#include "agent/plugin.h"
#include "node/resources.h"
#include "common/log.h"
#include "proto/deviceplugin_v1beta1.pb-c.h"
#include "proto/podresources_v1.pb-c.h"

static unsigned iters = 10000;

struct world {
    char state[64];
    struct gs_agent_config c;
    struct gs_inventory inv;
    struct gs_resources rs;
    struct gs_plugin *p;
};

static void world_up(struct world *w, const char *sharing_yaml)
{
    gs_error err = {0};
    snprintf(w->state, sizeof w->state, "/tmp/gs-fuzz-XXXXXX");
    assert_non_null(mkdtemp(w->state));
    assert_int_equal(gs_agent_config_defaults(&w->c, &err), 0);
    snprintf(w->c.state_root, sizeof w->c.state_root, "%s/slices", w->state);
    snprintf(w->c.interposer_path, sizeof w->c.interposer_path, "/dev/null");
    w->c.pair_window_ms = 0;
    struct gs_inventory_opts o = {.backend = GS_BACKEND_SIMULATED, .root = "", .sim_config = ""};
    assert_int_equal(gs_inventory_probe(&w->inv, &o, &err), 0);
    struct gs_sharing sh;
    memset(&sh, 0, sizeof sh);
    if (sharing_yaml)
        assert_int_equal(gs_sharing_parse(sharing_yaml, strlen(sharing_yaml), "t", &sh, &err), 0);
    assert_int_equal(gs_resources_build(&w->rs, &w->inv, &w->c, &sh, &err), 0);
    if (gs_plugin_create(&w->p, &w->c, &w->inv, &w->rs, &err))
        fail_msg("%s", err.msg);
}

static void world_down(struct world *w)
{
    gs_plugin_destroy(w->p);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", w->state);
    assert_int_equal(system(cmd), 0);
}

static const char *const paths[] = {GS_PLUGIN_PATH_OPTIONS, GS_PLUGIN_PATH_PREFERRED,
                                    GS_PLUGIN_PATH_ALLOCATE, GS_PLUGIN_PATH_PRESTART};

static void check_reply(const struct gs_rpc_reply *r, const uint8_t *in, size_t len)
{
    int ok = r->status == 0 || r->status == 3 || r->status == 9 || r->status == 8;
    if (!ok || (r->status && !r->msg[0])) {
        fprintf(stderr, "# bad reply status %d '%s' to %zu bytes:", r->status, r->msg, len);
        for (size_t i = 0; i < len && i < 64; i++)
            fprintf(stderr, " %02x", in[i]);
        fprintf(stderr, "\n");
        fail();
    }
    if (r->status == 0 && !r->data && r->len)
        fail_msg("OK reply without data");
}

static void feed(struct world *w, int res, const char *path, const uint8_t *in, size_t len)
{
    struct gs_rpc_reply r;
    gs_plugin_handle(w->p, res, path, in, len, &r);
    check_reply(&r, in, len);
    free(r.data);
}

/* Valid requests to start mutations from. */
static size_t seed_allocate(struct world *w, int res, uint8_t *buf, size_t cap)
{
    char ids[4][128];
    char *pid[4];
    for (int i = 0; i < 4; i++) {
        gs_resources_device_id(&w->rs.r[res], &w->inv, 0, (int)(rnd() % 3), ids[i], sizeof ids[i]);
        pid[i] = ids[i];
    }
    V1beta1__ContainerAllocateRequest c = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    c.n_devices_ids = 1 + rnd() % 2;
    c.devices_ids = pid;
    V1beta1__ContainerAllocateRequest *cp[1] = {&c};
    V1beta1__AllocateRequest m = V1BETA1__ALLOCATE_REQUEST__INIT;
    m.n_container_requests = 1;
    m.container_requests = cp;
    size_t n = v1beta1__allocate_request__get_packed_size(&m);
    assert_true(n <= cap);
    return v1beta1__allocate_request__pack(&m, buf);
}

static size_t seed_preferred(struct world *w, int res, uint8_t *buf, size_t cap)
{
    char ids[8][128];
    char *pid[8];
    for (int i = 0; i < 8; i++) {
        gs_resources_device_id(&w->rs.r[res], &w->inv, 0, i % 4, ids[i], sizeof ids[i]);
        pid[i] = ids[i];
    }
    V1beta1__ContainerPreferredAllocationRequest c =
        V1BETA1__CONTAINER_PREFERRED_ALLOCATION_REQUEST__INIT;
    c.n_available_deviceids = 4;
    c.available_deviceids = pid;
    c.n_must_include_deviceids = 1;
    c.must_include_deviceids = pid + 4;
    c.allocation_size = (int32_t)(rnd() % 6) - 1;
    V1beta1__ContainerPreferredAllocationRequest *cp[1] = {&c};
    V1beta1__PreferredAllocationRequest m = V1BETA1__PREFERRED_ALLOCATION_REQUEST__INIT;
    m.n_container_requests = 1;
    m.container_requests = cp;
    assert_true(v1beta1__preferred_allocation_request__get_packed_size(&m) <= cap);
    return v1beta1__preferred_allocation_request__pack(&m, buf);
}

static size_t mutate(uint8_t *buf, size_t len, size_t cap)
{
    int n = 1 + (int)(rnd() % 4);
    for (int k = 0; k < n; k++) {
        switch (rnd() % 6) {
        case 0: /* flip a bit */
            if (len)
                buf[rnd() % len] ^= (uint8_t)(1u << (rnd() % 8));
            break;
        case 1: /* truncate */
            if (len)
                len = rnd() % len;
            break;
        case 2: /* a random byte */
            if (len)
                buf[rnd() % len] = (uint8_t)rnd();
            break;
        case 3: /* insert a huge varint length */
            if (len + 10 < cap) {
                size_t at = len ? rnd() % len : 0;
                memmove(buf + at + 5, buf + at, len - at);
                const uint8_t v[5] = {0xff, 0xff, 0xff, 0xff, 0x0f};
                memcpy(buf + at, v, 5);
                len += 5;
            }
            break;
        case 4: /* duplicate a chunk */
            if (len && len * 2 < cap) {
                size_t a = rnd() % len, l = 1 + rnd() % (len - a);
                memcpy(buf + len, buf + a, l);
                len += l;
            }
            break;
        default: /* a random tag byte at the end */
            if (len + 1 < cap)
                buf[len++] = (uint8_t)rnd();
        }
    }
    return len;
}

static void fuzz_world(struct world *w)
{
    uint8_t buf[4096];
    for (int res = 0; res < w->rs.n; res++) {
        for (unsigned i = 0; i < iters; i++) {
            /* pure noise on every path */
            size_t len = rnd() % 200;
            for (size_t k = 0; k < len; k++)
                buf[k] = (uint8_t)rnd();
            feed(w, res, paths[rnd() % 4], buf, len);
            /* mutated valid requests */
            len = seed_allocate(w, res, buf, sizeof buf);
            len = mutate(buf, len, sizeof buf);
            feed(w, res, GS_PLUGIN_PATH_ALLOCATE, buf, len);
            len = seed_preferred(w, res, buf, sizeof buf);
            if (rnd() % 2)
                len = mutate(buf, len, sizeof buf);
            feed(w, res, GS_PLUGIN_PATH_PREFERRED, buf, len);
        }
        feed(w, res, GS_PLUGIN_PATH_ALLOCATE, NULL, 0);
        feed(w, res, GS_PLUGIN_PATH_OPTIONS, (const uint8_t *)"", 0);
    }
}

static void test_fractional_handlers(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, NULL);
    fuzz_world(&w);
    world_down(&w);
}

static void test_replica_handlers(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, "version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n"
                 "    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n");
    fuzz_world(&w);
    world_down(&w);
}

static void test_reclaim_decoder(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, NULL);
    char id[64];
    gs_resources_device_id(&w.rs.r[0], &w.inv, 0, 1, id, sizeof id);
    char *ids[1] = {id};
    V1__ContainerDevices d = V1__CONTAINER_DEVICES__INIT;
    d.resource_name = "gpuslice.io/gpu-memory";
    d.n_device_ids = 1;
    d.device_ids = ids;
    V1__ContainerDevices *dp[1] = {&d};
    V1__ContainerResources c = V1__CONTAINER_RESOURCES__INIT;
    c.name = "c";
    c.n_devices = 1;
    c.devices = dp;
    V1__ContainerResources *cp[1] = {&c};
    V1__PodResources p = V1__POD_RESOURCES__INIT;
    p.name = "p";
    p.namespace_ = "ns";
    p.n_containers = 1;
    p.containers = cp;
    V1__PodResources *pp[1] = {&p};
    V1__ListPodResourcesResponse m = V1__LIST_POD_RESOURCES_RESPONSE__INIT;
    m.n_pod_resources = 1;
    m.pod_resources = pp;
    uint8_t seed[1024], buf[4096];
    size_t slen = v1__list_pod_resources_response__pack(&m, seed);
    gs_error err = {0};
    assert_true(gs_plugin_reclaim(w.p, seed, slen, &err) >= 0);
    for (unsigned i = 0; i < iters * 4; i++) {
        memcpy(buf, seed, slen);
        size_t len = mutate(buf, slen, sizeof buf);
        int rc = gs_plugin_reclaim(w.p, buf, len, &err);
        if (rc < 0 && !err.msg[0])
            fail_msg("reclaim error without a message");
    }
    world_down(&w);
}

static void test_sharing_yaml(void **st)
{
    (void)st;
    const char *seed = "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
                       "    failRequestsGreaterThanOne: false\n    resources:\n"
                       "    - name: nvidia.com/gpu\n      replicas: 4\n      rename: x\n";
    size_t slen = strlen(seed);
    char buf[1024];
    for (unsigned i = 0; i < iters * 4; i++) {
        memcpy(buf, seed, slen);
        size_t len = mutate((uint8_t *)buf, slen, sizeof buf);
        struct gs_sharing sh;
        gs_error err = {0};
        int rc = gs_sharing_parse(buf, len, "fuzz", &sh, &err);
        if (rc < 0 && !err.msg[0])
            fail_msg("sharing error without a message");
        if (rc == 0)
            assert_true(sh.n >= 1 && sh.res[0].replicas >= 1 && sh.res[0].replicas <= 256);
    }
}

static void test_device_ids(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, NULL);
    const char alpha[] = "gpu0123456789-memptrx:SIM";
    char id[40];
    for (unsigned i = 0; i < iters * 20; i++) {
        size_t len = rnd() % (sizeof id - 1);
        for (size_t k = 0; k < len; k++)
            id[k] = alpha[rnd() % (sizeof alpha - 1)];
        id[len] = '\0';
        for (int r = 0; r < w.rs.n; r++) {
            int g, u;
            if (gs_resources_parse_id(&w.rs.r[r], &w.inv, id, &g, &u) == 0) {
                char canon[128];
                gs_resources_device_id(&w.rs.r[r], &w.inv, g, u, canon, sizeof canon);
                assert_string_equal(canon, id);
                assert_true(u >= 0 && u < w.rs.r[r].per_gpu[g]);
            }
        }
    }
    world_down(&w);
}

int main(void)
{
    const char *s = getenv("GS_FUZZ_ITERS");
    if (s)
        iters = (unsigned)strtoul(s, NULL, 10);
    s = getenv("GS_FUZZ_SEED");
    if (s)
        rng_state = strtoull(s, NULL, 0) | 1;
    gs_log_set_level(GS_LOG_ERROR); /* refusals log warnings; keep the TAP readable */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fractional_handlers), cmocka_unit_test(test_replica_handlers),
        cmocka_unit_test(test_reclaim_decoder),     cmocka_unit_test(test_sharing_yaml),
        cmocka_unit_test(test_device_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
