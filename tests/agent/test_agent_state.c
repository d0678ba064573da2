/* The agent's state on disk (issue 19): each slice's record (contract/slice.h),
 * Allocate moving units between slices, recovery from what an older agent or a
 * crash left, and a torture: the plugin is SIGKILLed at random points while it
 * allocates (and while it recovers), hundreds of times, and after every
 * restart the state root must hold only whole slices, no unit in two slices,
 * limits that match each slice's units and add up to at most the pool, and
 * exactly the slices the kubelet was last told about.
 *
 * The torture forks a child that creates the plugin (recovery) and answers
 * Allocate requests made up at random (a kubelet that hands out units the
 * agent still holds, as it does when their container is gone) until the
 * parent kills it after a random delay; the child tells the parent each
 * request before it makes it and each answer after, so the parent knows what
 * the kubelet was told. GS_CRASH_KILLS sets how many kills (default 600),
 * GS_CRASH_SEED the seed; nothing depends on the wall clock. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testrng.h"

#include "agent/plugin.h"
#include "common/log.h"
#include "contract/contract.h"
#include "contract/ledger.h"
#include "contract/limits.h"
#include "contract/slice.h"
#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"
#include "proto/deviceplugin_v1beta1.pb-c.h"

#define MAXU 256 /* units of one resource on one GPU the checks handle */
#define MAXS 1024
#define NGPU 2

struct world {
    char dir[64];
    char sim[128];
    struct gs_agent_config c;
    struct gs_inventory inv;
    struct gs_resources rs;
    int res_of[GS_RES_NKINDS]; /* resource index of each kind, -1 */
};

static void world_up(struct world *w, unsigned pair_ms)
{
    gs_error err = {0};
    snprintf(w->dir, sizeof w->dir, "/tmp/gs-state-XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    snprintf(w->sim, sizeof w->sim, "%s/sim.conf", w->dir);
    FILE *f = fopen(w->sim, "w");
    assert_non_null(f);
    fprintf(f, "gpus = %d\nmemory = 16Gi\n", NGPU);
    fclose(f);
    assert_int_equal(gs_agent_config_defaults(&w->c, &err), 0);
    snprintf(w->c.state_root, sizeof w->c.state_root, "%s/slices", w->dir);
    snprintf(w->c.interposer_path, sizeof w->c.interposer_path, "/dev/null");
    snprintf(w->c.sim_config, sizeof w->c.sim_config, "%s", w->sim);
    w->c.pair_window_ms = pair_ms;
    struct gs_inventory_opts o = {
        .backend = GS_BACKEND_SIMULATED, .root = "", .sim_config = w->c.sim_config};
    assert_int_equal(gs_inventory_probe(&w->inv, &o, &err), 0);
    assert_int_equal(w->inv.ngpu, NGPU);
    assert_int_equal(gs_resources_build(&w->rs, &w->inv, &w->c, NULL, &err), 0);
    for (int k = 0; k < GS_RES_NKINDS; k++)
        w->res_of[k] = -1;
    for (int r = 0; r < w->rs.n; r++) {
        w->res_of[w->rs.r[r].kind] = r;
        for (int g = 0; g < NGPU; g++)
            assert_true(w->rs.r[r].per_gpu[g] <= MAXU);
    }
    assert_true(w->res_of[GS_RES_MEMORY] >= 0 && w->res_of[GS_RES_COMPUTE] >= 0 &&
                w->res_of[GS_RES_REALTIME] >= 0);
}

static void world_down(struct world *w)
{
    gs_inventory_close(&w->inv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", w->dir);
    assert_int_equal(system(cmd), 0);
}

static struct gs_plugin *start(struct world *w, struct gs_plugin_recovery *rv)
{
    struct gs_plugin *p = NULL;
    gs_error err = {0};
    if (gs_plugin_create(&p, &w->c, &w->inv, &w->rs, &err) < 0)
        fail_msg("%s", err.msg);
    if (rv)
        gs_plugin_recovery(p, rv);
    return p;
}

/* Allocate of n units of resource res on gpu, as the kubelet sends it.
 * Returns the gRPC status; the slice the answer names in sid. */
static int allocate(struct gs_plugin *p, const struct world *w, int res, int gpu, const int *units,
                    int n, char *sid, size_t sidlen)
{
    char ids[64][128];
    char *pid[64];
    assert_true(n <= 64);
    for (int i = 0; i < n; i++) {
        gs_resources_device_id(&w->rs.r[res], &w->inv, gpu, units[i], ids[i], sizeof ids[i]);
        pid[i] = ids[i];
    }
    V1beta1__ContainerAllocateRequest c = V1BETA1__CONTAINER_ALLOCATE_REQUEST__INIT;
    c.n_devices_ids = (size_t)n;
    c.devices_ids = pid;
    V1beta1__ContainerAllocateRequest *cp[1] = {&c};
    V1beta1__AllocateRequest m = V1BETA1__ALLOCATE_REQUEST__INIT;
    m.n_container_requests = 1;
    m.container_requests = cp;
    uint8_t buf[16384];
    assert_true(v1beta1__allocate_request__get_packed_size(&m) <= sizeof buf);
    size_t len = v1beta1__allocate_request__pack(&m, buf);
    struct gs_rpc_reply out;
    gs_plugin_handle(p, res, GS_PLUGIN_PATH_ALLOCATE, buf, len, &out);
    sid[0] = '\0';
    if (out.status == 0) {
        V1beta1__AllocateResponse *a = v1beta1__allocate_response__unpack(NULL, out.len, out.data);
        if (a && a->n_container_responses == 1)
            for (size_t i = 0; i < a->container_responses[0]->n_envs; i++)
                if (!strcmp(a->container_responses[0]->envs[i]->key, GS_ENV_SLICE_ID))
                    snprintf(sid, sidlen, "%s", a->container_responses[0]->envs[i]->value);
        v1beta1__allocate_response__free_unpacked(a, NULL);
    }
    free(out.data);
    return out.status;
}

static int range_alloc(struct gs_plugin *p, const struct world *w, enum gs_res_kind kind, int first,
                       int n, char *sid)
{
    int u[64];
    for (int i = 0; i < n; i++)
        u[i] = first + i;
    return allocate(p, w, w->res_of[kind], 0, u, n, sid, GS_SLICE_ID_MAX + 1);
}

/* ---- the state root as a reader sees it, and the invariants ----------------- */

struct disk {
    int n;
    char id[MAXS][GS_SLICE_ID_MAX + 1];
    int gpu[MAXS];
    int units[MAXS][GS_RES_NKINDS];
    struct gs_limits lim[MAXS];
    int16_t owner[GS_RES_MAX][NGPU][MAXU]; /* slice index + 1 */
};

static int slice_file_ok(const char *name)
{
    return !strcmp(name, GS_SLICE_LIMITS) || !strcmp(name, GS_SLICE_LEDGER) ||
           !strcmp(name, GS_SLICE_ALLOC) || !strcmp(name, GS_SLICE_LOG);
}

/* Reads every slice with the contract's readers and checks: each directory
 * holds a whole slice (record, limits, ledger, nothing half written); no unit
 * in two records; each slice's limits are what its units give; per GPU the
 * limits add up to at most what is advertised. */
static void disk_read(const struct world *w, struct disk *d)
{
    memset(d, 0, sizeof *d);
    DIR *dir = opendir(w->c.state_root);
    assert_non_null(dir);
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, GS_AGENT_DIR))
            continue;
        if (strncmp(e->d_name, "gs-", 3))
            fail_msg("%s in the state root is not a slice", e->d_name);
        assert_true(d->n < MAXS);
        int si = d->n++;
        snprintf(d->id[si], sizeof d->id[si], "%.*s", GS_SLICE_ID_MAX, e->d_name);
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", w->c.state_root, e->d_name);
        DIR *sd = opendir(path);
        assert_non_null(sd);
        struct dirent *f;
        while ((f = readdir(sd)))
            if (f->d_name[0] != '.' && !slice_file_ok(f->d_name))
                fail_msg("slice %s holds %s: a file half written", e->d_name, f->d_name);
        closedir(sd);
        struct gs_slice_record rec;
        gs_error err = {0};
        if (gs_slice_record_read(w->c.state_root, e->d_name, &rec, &err) < 0)
            fail_msg("slice %s: %s", e->d_name, err.msg);
        assert_int_equal(rec.version, GS_SLICE_RECORD_VERSION);
        assert_true(rec.ndev > 0 && rec.gpu >= 0 && rec.gpu < NGPU);
        d->gpu[si] = rec.gpu;
        for (size_t i = 0; i < rec.ndev; i++) {
            int r = gs_resources_find(&w->rs, rec.dev[i].resource), g, u;
            assert_true(r >= 0);
            assert_int_equal(gs_resources_parse_id(&w->rs.r[r], &w->inv, rec.dev[i].id, &g, &u), 0);
            assert_int_equal(g, rec.gpu);
            if (d->owner[r][g][u])
                fail_msg("%s is held by slices %s and %s", rec.dev[i].id,
                         d->id[d->owner[r][g][u] - 1], e->d_name);
            d->owner[r][g][u] = (int16_t)(si + 1);
            d->units[si][w->rs.r[r].kind]++;
        }
        gs_slice_record_free(&rec);
        struct gs_slice_paths sp;
        assert_int_equal(gs_slice_paths(w->c.state_root, e->d_name, &sp, NULL), 0);
        if (gs_limits_load(sp.limits, &d->lim[si], &err) < 0)
            fail_msg("slice %s: %s", e->d_name, err.msg);
        assert_int_equal(access(sp.ledger, R_OK | W_OK), 0);
    }
    closedir(dir);
    uint64_t mem[NGPU] = {0}, pct[NGPU] = {0};
    int rt[NGPU] = {0};
    for (int si = 0; si < d->n; si++) {
        int g = d->gpu[si];
        const int *u = d->units[si];
        uint64_t want_mem =
            (uint64_t)u[GS_RES_MEMORY] * w->rs.r[w->res_of[GS_RES_MEMORY]].unit_bytes[g];
        uint64_t want_pct = (uint64_t)u[GS_RES_COMPUTE];
        if (d->lim[si].memory != (want_mem ? want_mem : 1) ||
            d->lim[si].compute != (want_pct > 100 ? 100 : want_pct) ||
            d->lim[si].priority != (u[GS_RES_REALTIME] ? GS_PRIO_CRITICAL : GS_PRIO_BEST_EFFORT) ||
            strcmp(d->lim[si].slice_id, d->id[si]))
            fail_msg("slice %s: limits memory %llu compute %llu priority %d, but it holds %d "
                     "memory, %d compute and %d realtime units",
                     d->id[si], (unsigned long long)d->lim[si].memory,
                     (unsigned long long)d->lim[si].compute, d->lim[si].priority, u[GS_RES_MEMORY],
                     u[GS_RES_COMPUTE], u[GS_RES_REALTIME]);
        mem[g] += want_mem;
        pct[g] += d->lim[si].compute;
        rt[g] += u[GS_RES_REALTIME];
    }
    for (int g = 0; g < NGPU; g++) {
        const struct gs_resource *m = &w->rs.r[w->res_of[GS_RES_MEMORY]];
        assert_true(mem[g] <= (uint64_t)m->per_gpu[g] * m->unit_bytes[g]);
        assert_true(mem[g] <= w->rs.advertised[g]);
        assert_true(pct[g] <= 100);
        assert_true(rt[g] <= w->rs.r[w->res_of[GS_RES_REALTIME]].per_gpu[g]);
    }
}

static const char *disk_owner(const struct disk *d, int r, int g, int u)
{
    return d->owner[r][g][u] ? d->id[d->owner[r][g][u] - 1] : "";
}

static int disk_find(const struct disk *d, const char *id)
{
    for (int i = 0; i < d->n; i++)
        if (!strcmp(d->id[i], id))
            return i;
    return -1;
}

/* ---- deterministic cases ------------------------------------------------------ */

/* The case: Allocate mem 0..3, then (a new container) mem 2..5. */
static void test_move_rewrites_the_slice_left(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, 0);
    struct gs_plugin *p = start(&w, NULL);
    char a[GS_SLICE_ID_MAX + 1], b[GS_SLICE_ID_MAX + 1], c[GS_SLICE_ID_MAX + 1];
    assert_int_equal(range_alloc(p, &w, GS_RES_MEMORY, 0, 4, a), 0);
    assert_int_equal(range_alloc(p, &w, GS_RES_MEMORY, 2, 4, b), 0);
    assert_string_not_equal(a, b);
    static struct disk d, d2;
    disk_read(&w, &d);
    int ia = disk_find(&d, a), ib = disk_find(&d, b);
    assert_true(ia >= 0 && ib >= 0 && d.n == 2);
    assert_int_equal(d.units[ia][GS_RES_MEMORY], 2);
    assert_int_equal(d.lim[ia].memory, 512ull << 20);
    assert_int_equal(d.units[ib][GS_RES_MEMORY], 4);
    assert_int_equal(d.lim[ib].memory, 1ull << 30);
    int r = w.res_of[GS_RES_MEMORY];
    assert_string_equal(disk_owner(&d, r, 0, 1), a);
    assert_string_equal(disk_owner(&d, r, 0, 2), b);
    /* A slice left with no units goes. */
    assert_int_equal(range_alloc(p, &w, GS_RES_MEMORY, 0, 2, c), 0);
    disk_read(&w, &d);
    assert_int_equal(d.n, 2);
    assert_int_equal(disk_find(&d, a), -1);
    assert_int_equal(gs_plugin_slice_count(p), 2);
    /* A restart finds exactly that, with nothing to repair. */
    gs_plugin_destroy(p);
    struct gs_plugin_recovery rv;
    p = start(&w, &rv);
    assert_int_equal(rv.kept, 2);
    assert_int_equal(rv.repaired + rv.removed + rv.discarded + rv.tidied + rv.left, 0);
    disk_read(&w, &d2);
    assert_int_equal(d2.n, 2);
    assert_memory_equal(d.owner, d2.owner, sizeof d.owner); /* listed in the same order */
    gs_plugin_destroy(p);
    world_down(&w);
}

static void mkslice(const struct world *w, const char *id)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", w->c.state_root, id);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void put(const struct world *w, const char *id, const char *file, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/%s", w->c.state_root, id, file);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A slice as the agent before records had a seq wrote it: limits for `units`
 * memory units, an alloc file listing `first..last`. */
static void old_slice(const struct world *w, const char *id, int created, int first, int last,
                      int units)
{
    mkslice(w, id);
    struct gs_limits l;
    gs_resources_fill_limits(&w->rs, &w->inv, &w->c, 0, (uint64_t)units << 28, 0, 0, id, &l);
    struct gs_slice_paths sp;
    gs_error err = {0};
    assert_int_equal(gs_slice_paths(w->c.state_root, id, &sp, &err), 0);
    assert_int_equal(gs_limits_write(sp.limits, &l, &err), 0);
    assert_int_equal(gs_ledger_create(sp.ledger, &err), 0);
    char text[4096];
    int n = snprintf(text, sizeof text,
                     "# gpuslice agent: kubelet device IDs held by this slice\ngpu 0\ncreated %d\n",
                     created);
    for (int u = first; u <= last; u++)
        n += snprintf(text + n, sizeof text - (size_t)n,
                      "device gpuslice.io/gpu-memory gpu0-mem-%04d\n", u);
    put(w, id, GS_SLICE_ALLOC, text);
}

/* What the issue found after a crash, and an older agent's state: the later
 * of two slices claiming a unit keeps it, the other's limits shrink; half-made
 * directories of the agent's go; other directories stay. */
static void test_recovery_repairs_old_state(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, 0);
    gs_plugin_destroy(start(&w, NULL));     /* creates the state root */
    old_slice(&w, "gs-aaaa", 100, 0, 3, 4); /* lost 2, 3 to bbbb: both lists say 4 units */
    old_slice(&w, "gs-bbbb", 200, 2, 5, 4);
    old_slice(&w, "gs-cccc", 300, 10, 11, 7); /* limits say 7 units for 2 */
    mkslice(&w, "gs-dddd");                   /* only a writer's temporary file */
    put(&w, "gs-dddd", "limits.tmp.4242", "memory = 1\n");
    mkslice(&w, "gs-eeee"); /* limits and ledger, no record: never committed */
    put(&w, "gs-eeee", GS_SLICE_LIMITS, "memory = 1073741824\n");
    put(&w, "gs-eeee", GS_SLICE_LEDGER, "");
    mkslice(&w, "gs-ffff"); /* a record cut short */
    put(&w, "gs-ffff", GS_SLICE_ALLOC,
        "version 2\nseq 9\ngpu 0\ncreated 1\ndevice gpuslice.io/gpu-memory gpu0-mem-0020\n");
    old_slice(&w, "gs-gggg", 400, 30, 30, 1); /* its only unit is no longer advertised: */
    put(&w, "gs-gggg", GS_SLICE_ALLOC,
        "gpu 0\ncreated 1\ndevice gpuslice.io/gpu-memory "
        "gpu0-mem-9999\n");
    mkslice(&w, "gs-hhhh"); /* no record, and a file that is not the agent's */
    put(&w, "gs-hhhh", "notes", "mine\n");
    mkslice(&w, "gs-iiii"); /* a newer agent's */
    put(&w, "gs-iiii", GS_SLICE_ALLOC, "version 3\nseq 1\ngpu 0\nend\n");
    mkslice(&w, "other"); /* not the agent's by its name */
    put(&w, "gs-bbbb", "ledger.tmp.77", "");

    struct gs_plugin_recovery rv;
    struct gs_plugin *p = start(&w, &rv);
    assert_int_equal(rv.kept, 3);
    assert_int_equal(rv.repaired, 3);  /* aaaa lost units, bbbb an old record, cccc its limits */
    assert_int_equal(rv.removed, 1);   /* gggg */
    assert_int_equal(rv.discarded, 3); /* dddd, eeee, ffff */
    assert_int_equal(rv.tidied, 1);
    assert_int_equal(rv.left, 2); /* hhhh, iiii */
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gs-hhhh/notes", w.c.state_root);
    assert_int_equal(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s/other", w.c.state_root);
    assert_int_equal(access(path, F_OK), 0);
    assert_int_equal(gs_slice_remove(w.c.state_root, "gs-iiii", NULL), 0);
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/gs-hhhh' '%s/other'", w.c.state_root, w.c.state_root);
    assert_int_equal(system(cmd), 0);
    static struct disk d;
    disk_read(&w, &d);
    assert_int_equal(d.n, 3);
    int r = w.res_of[GS_RES_MEMORY];
    assert_string_equal(disk_owner(&d, r, 0, 1), "gs-aaaa");
    assert_string_equal(disk_owner(&d, r, 0, 2), "gs-bbbb");
    assert_int_equal(d.lim[disk_find(&d, "gs-aaaa")].memory, 512ull << 20);
    assert_int_equal(d.lim[disk_find(&d, "gs-cccc")].memory, 512ull << 20);
    /* The next Allocate numbers its record after the ones found. */
    char sid[GS_SLICE_ID_MAX + 1];
    assert_int_equal(range_alloc(p, &w, GS_RES_MEMORY, 40, 1, sid), 0);
    struct gs_slice_record rec, old;
    assert_int_equal(gs_slice_record_read(w.c.state_root, sid, &rec, NULL), 0);
    assert_int_equal(gs_slice_record_read(w.c.state_root, "gs-cccc", &old, NULL), 0);
    assert_true(rec.seq > old.seq);
    gs_slice_record_free(&rec);
    gs_slice_record_free(&old);
    gs_plugin_destroy(p);
    p = start(&w, &rv); /* a second restart has nothing left to do */
    assert_int_equal(rv.kept, 4);
    assert_int_equal(rv.repaired + rv.removed + rv.discarded + rv.tidied + rv.left, 0);
    gs_plugin_destroy(p);
    world_down(&w);
}

/* The record's format: what is whole and what is not. */
static void test_record_format(void **st)
{
    (void)st;
    struct world w;
    world_up(&w, 0);
    gs_plugin_destroy(start(&w, NULL));
    mkslice(&w, "gs-r");
    struct gs_slice_device dev[2] = {{"gpuslice.io/gpu-memory", "gpu0-mem-0001"},
                                     {"gpuslice.io/realtime", "gpu0-rt-0"}};
    struct gs_slice_record in = {.version = 2,
                                 .seq = 12345678901ull,
                                 .gpu = 1,
                                 .created = 7,
                                 .ndev = 2,
                                 .dev = dev},
                           out;
    assert_int_equal(gs_slice_record_write(w.c.state_root, "gs-r", &in, NULL), 0);
    assert_int_equal(gs_slice_record_read(w.c.state_root, "gs-r", &out, NULL), 0);
    assert_true(out.version == 2 && out.seq == in.seq && out.gpu == 1 && out.created == 7 &&
                out.ndev == 2);
    assert_string_equal(out.dev[1].id, "gpu0-rt-0");
    gs_slice_record_free(&out);
    static const struct {
        const char *text;
        int rc;
    } cases[] = {
        {"gpu 0\ndevice a b\n", GS_OK}, /* before version 2 */
        {"version 2\nseq 1\ngpu 0\ndevice a b\nend\n", GS_OK},
        {"version 2\nseq 1\ngpu 0\ndevice a b\n", GS_EINVAL}, /* cut short */
        {"version 2\nseq 1\ngpu 0\ndevice a b\nend\ndevice c d\n", GS_EINVAL},
        {"version 2\nseq 1\ngpu 0\ndevice a\nend\n", GS_EINVAL},
        {"version 2\nseq 1\ngpu 0\ndevice a b c\nend\n", GS_EINVAL},
        {"version 2\nseq -1\ngpu 0\nend\n", GS_EINVAL},
        {"version 2\nseq 1\nend\n", GS_EINVAL}, /* no gpu */
        {"version 2\nseq 1\ngpu 0\nfrob 1\nend\n", GS_EINVAL},
        {"version 9\nseq 1\ngpu 0\nend\n", GS_ENOTSUP},
        {"", GS_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        put(&w, "gs-r", GS_SLICE_ALLOC, cases[i].text);
        int rc = gs_slice_record_read(w.c.state_root, "gs-r", &out, NULL);
        if (rc != cases[i].rc)
            fail_msg("record '%s': %d, expected %d", cases[i].text, rc, cases[i].rc);
        gs_slice_record_free(&out);
    }
    struct gs_slice_device bad = {"gpuslice.io/gpu-memory", "gpu0 mem"};
    in.dev = &bad;
    in.ndev = 1;
    assert_int_equal(gs_slice_record_write(w.c.state_root, "gs-r", &in, NULL), GS_EINVAL);
    assert_int_equal(gs_slice_remove(w.c.state_root, "gs-r", NULL), 0);
    assert_int_equal(gs_slice_record_read(w.c.state_root, "gs-r", &out, NULL), GS_ENOENT);
    world_down(&w);
}

/* ---- the torture ------------------------------------------------------------------ */

struct msg {
    char type; /* 'B' before an Allocate, 'A' its answer, 'F' it failed */
    int8_t res, gpu, n;
    int16_t units[32];
    char slice[GS_SLICE_ID_MAX + 1];
};

static void say(int fd, const struct msg *m)
{
    if (write(fd, m, sizeof *m) != (ssize_t)sizeof *m)
        _exit(5);
}

/* The killed process: recovery, then Allocates made up at random. */
static void child(struct world *w, int fd, uint64_t seed)
{
    rng_state = seed | 1;
    struct gs_plugin *p = NULL;
    if (gs_plugin_create(&p, &w->c, &w->inv, &w->rs, NULL) < 0)
        _exit(3);
    for (;;) {
        struct msg m = {.type = 'B'};
        uint32_t x = rnd() % 10;
        enum gs_res_kind kind = x < 6 ? GS_RES_MEMORY : x < 9 ? GS_RES_COMPUTE : GS_RES_REALTIME;
        int res = w->res_of[kind], gpu = (int)(rnd() % NGPU);
        int per = w->rs.r[res].per_gpu[gpu];
        int n = kind == GS_RES_MEMORY    ? 1 + (int)(rnd() % 8)
                : kind == GS_RES_COMPUTE ? 1 + (int)(rnd() % 30)
                                         : 1;
        n = n > per ? per : n;
        int units[32];
        for (int i = 0; i < n;) {
            int u = (int)(rnd() % (uint32_t)per), dup = 0;
            for (int k = 0; k < i; k++)
                dup |= units[k] == u;
            if (!dup)
                units[i++] = u;
        }
        m.res = (int8_t)res;
        m.gpu = (int8_t)gpu;
        m.n = (int8_t)n;
        for (int i = 0; i < n; i++)
            m.units[i] = (int16_t)units[i];
        say(fd, &m);
        int status = allocate(p, w, res, gpu, units, n, m.slice, sizeof m.slice);
        m.type = status == 0 && m.slice[0] ? 'A' : 'F';
        say(fd, &m);
    }
}

/* What the kubelet was told: the slice each unit was last given to. */
struct model {
    char own[GS_RES_MAX][NGPU][MAXU][GS_SLICE_ID_MAX + 1];
};

struct tally {
    int kills, kills_in_recovery, restarts, checks, in_flight, in_flight_committed, failed;
    struct gs_plugin_recovery rv;
};

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void kill_after(pid_t pid, long us)
{
    sleep_us(us);
    kill(pid, SIGKILL);
    int wst;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR)
        ;
    if (!WIFSIGNALED(wst))
        fail_msg("the agent's process ended by itself (status %d) before it was killed", wst);
}

/* The restart after a kill and every check: the state root (disk_read) and
 * the kubelet's view. A unit outside the request in flight is where the
 * kubelet was told; the request in flight took all its units or none (its
 * record is one rename), and the slices they came from may have given them up
 * already. */
static void restart_and_check(struct world *w, struct model *k, const struct msg *fl,
                              struct tally *t, struct disk *d)
{
    struct gs_plugin_recovery rv;
    struct gs_plugin *p = start(w, &rv);
    t->restarts++;
    t->rv.kept += rv.kept;
    t->rv.repaired += rv.repaired;
    t->rv.removed += rv.removed;
    t->rv.discarded += rv.discarded;
    t->rv.tidied += rv.tidied;
    assert_int_equal(rv.left, 0);
    disk_read(w, d);
    assert_int_equal(gs_plugin_slice_count(p), d->n);
    gs_plugin_destroy(p);
    char in_flight[GS_RES_MAX][NGPU][MAXU] = {{{0}}};
    if (fl)
        for (int i = 0; i < fl->n; i++)
            in_flight[fl->res][fl->gpu][fl->units[i]] = 1;
    const char *x = NULL; /* the slice the request in flight went to, if it was committed */
    for (int r = 0; r < w->rs.n; r++)
        for (int g = 0; g < NGPU; g++)
            for (int u = 0; u < w->rs.r[r].per_gpu[g]; u++) {
                const char *on = disk_owner(d, r, g, u), *want = k->own[r][g][u];
                if (!in_flight[r][g][u] && strcmp(on, want))
                    fail_msg("after restart %d: unit %d of %s on GPU %d is held by '%s', but "
                             "the kubelet was told '%s'",
                             t->restarts, u, w->rs.r[r].name, g, on, want);
                if (in_flight[r][g][u] && on[0] && strcmp(on, want))
                    x = on;
            }
    if (fl) {
        t->in_flight++;
        t->in_flight_committed += x != NULL;
        for (int i = 0; i < fl->n; i++) {
            const char *on = disk_owner(d, fl->res, fl->gpu, fl->units[i]);
            const char *was = k->own[fl->res][fl->gpu][fl->units[i]];
            if (x ? strcmp(on, x) : on[0] && strcmp(on, was))
                fail_msg("after restart %d: the Allocate in flight is half done: unit %d "
                         "is held by '%s' (taker '%s', before '%s')",
                         t->restarts, fl->units[i], on, x ? x : "", was);
            snprintf(k->own[fl->res][fl->gpu][fl->units[i]], GS_SLICE_ID_MAX + 1, "%s", on);
        }
    }
    t->checks++;
}

static void test_sigkill_torture(void **st)
{
    (void)st;
    int want = 600;
    const char *s = getenv("GS_CRASH_KILLS");
    if (s)
        want = atoi(s);
    uint64_t seed = 0x2545f4914f6cdd1dull;
    if ((s = getenv("GS_CRASH_SEED")))
        seed = strtoull(s, NULL, 0);
    rng_state = seed | 1;
    struct world w;
    world_up(&w, 3); /* a short pairing window: Allocates join slices too */
    gs_plugin_destroy(start(&w, NULL));
    struct model *k = calloc(1, sizeof *k);
    struct disk *d = calloc(1, sizeof *d);
    assert_non_null(k);
    assert_non_null(d);
    struct tally t = {0};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (t.kills < want) {
        int fds[2];
        assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
        (void)fcntl(fds[1], F_SETPIPE_SZ, 1 << 20); /* the child never waits on the pipe */
        uint64_t cseed = ((uint64_t)rnd() << 32) | rnd();
        long delay = rnd() % 8 == 0 ? (long)(rnd() % 400) : (long)(rnd() % 6000);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child(&w, fds[1], cseed);
            _exit(4);
        }
        close(fds[1]);
        kill_after(pid, delay);
        t.kills++;
        /* What the kubelet was told, up to the kill. */
        struct msg m, fl = {0};
        int pending = 0;
        ssize_t got;
        while ((got = read(fds[0], &m, sizeof m)) == (ssize_t)sizeof m) {
            if (m.type == 'B') {
                fl = m;
                pending = 1;
                continue;
            }
            assert_true(pending && m.res == fl.res && m.n == fl.n);
            pending = 0;
            if (m.type == 'F') {
                t.failed++;
                continue;
            }
            for (int i = 0; i < m.n; i++)
                snprintf(k->own[m.res][m.gpu][m.units[i]], GS_SLICE_ID_MAX + 1, "%s", m.slice);
        }
        assert_true(got == 0);
        close(fds[0]);
        /* Now and then the restart itself is killed part-way through its recovery. */
        if (rnd() % 4 == 0) {
            pid = fork();
            assert_true(pid >= 0);
            if (pid == 0) {
                struct gs_plugin *p = NULL;
                gs_plugin_create(&p, &w.c, &w.inv, &w.rs, NULL);
                for (;;)
                    pause();
            }
            kill_after(pid, (long)(rnd() % 1500));
            t.kills++;
            t.kills_in_recovery++;
        }
        restart_and_check(&w, k, pending ? &fl : NULL, &t, d);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_int_equal(t.failed, 0);
    printf("# torture: %d SIGKILLs (%d of them during a restart's recovery), %d restarts "
           "checked (%d invariant checks each: whole slices, no unit twice, limits = units, "
           "limits <= pool, the kubelet's view), %d with an Allocate in flight (%d of those "
           "committed), in %.1f s\n",
           t.kills, t.kills_in_recovery, t.restarts, 5, t.in_flight, t.in_flight_committed,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    printf("# recoveries found: %d half-made or half-removed directories (removed), %d slices "
           "rewritten, %d emptied slices removed, %d slices with writers' temporary files; "
           "%d slices kept in all; %d on disk at the end\n",
           t.rv.discarded, t.rv.repaired, t.rv.removed, t.rv.tidied, t.rv.kept, d->n);
    free(k);
    free(d);
    world_down(&w);
}

int main(void)
{
    gs_log_set_level(GS_LOG_ERROR); /* recovery and moves log; keep the TAP readable */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_format),
        cmocka_unit_test(test_move_rewrites_the_slice_left),
        cmocka_unit_test(test_recovery_repairs_old_state),
        cmocka_unit_test(test_sigkill_torture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
