/* The doctor's TOML reader: the shapes containerd and K3s configs take, the
 * TOML corners around them, and hostile input (every prefix of a real config,
 * random byte mutations, deep nesting) that must be refused, never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "doctor/toml.h"

static struct gs_toml *parse_ok(const char *text)
{
    struct gs_toml *t = NULL;
    gs_error err = {0};
    int rc = gs_toml_parse(text, strlen(text), "test.toml", NULL, &t, &err);
    if (rc != 0)
        fail_msg("rejected: %s\n--- input ---\n%s", err.msg, text);
    return t;
}

static void rejects(const char *text, const char *needle)
{
    struct gs_toml *t = NULL;
    gs_error err = {0};
    int rc = gs_toml_parse(text, strlen(text), "bad.toml", NULL, &t, &err);
    if (rc >= 0)
        fail_msg("accepted: %s", text);
    assert_null(t);
    if (!strstr(err.msg, "bad.toml:"))
        fail_msg("error '%s' does not name the file and line", err.msg);
    if (needle && !strstr(err.msg, needle))
        fail_msg("error '%s' lacks '%s' (input: %s)", err.msg, needle, text);
}

#define KEY(...)                          \
    ((const char *const[]){__VA_ARGS__}), \
        (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void test_containerd_v2_quoted_headers(void **st)
{
    (void)st;
    struct gs_toml *t =
        parse_ok("version = 2\n"
                 "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                 "  default_runtime_name = \"nvidia\"\n"
                 "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.\"nvidia\"]\n"
                 "  runtime_type = \"io.containerd.runc.v2\"  # trailing comment\n"
                 "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.\"nvidia\".options]\n"
                 "  BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"
                 "  SystemdCgroup = true\n");
    const struct gs_toml_entry *v = gs_toml_get(t, KEY("version"));
    assert_non_null(v);
    assert_int_equal(v->type, GS_TOML_INT);
    assert_int_equal(v->integer, 2);
    assert_string_equal(gs_toml_get_str(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd",
                                               "default_runtime_name")),
                        "nvidia");
    assert_string_equal(gs_toml_get_str(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd",
                                               "runtimes", "nvidia", "options", "BinaryName")),
                        "/usr/bin/nvidia-container-runtime");
    const struct gs_toml_entry *b =
        gs_toml_get(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes",
                           "nvidia", "options", "SystemdCgroup"));
    assert_non_null(b);
    assert_int_equal(b->type, GS_TOML_BOOL);
    assert_true(b->boolean);
    /* the header itself is an entry: "is the table there" is a lookup */
    const struct gs_toml_entry *h = gs_toml_get(
        t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "nvidia"));
    assert_non_null(h);
    assert_int_equal(h->type, GS_TOML_TABLE);
    assert_int_equal(h->line, 4);
    gs_toml_free(t);
}

static void test_containerd_v3_literal_headers(void **st)
{
    (void)st;
    struct gs_toml *t =
        parse_ok("version = 3\n"
                 "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia']\n"
                 "  runtime_type = 'io.containerd.runc.v2'\n"
                 "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia'.options]\n"
                 "  BinaryName = '/usr/bin/nvidia-container-runtime'\n"
                 "[plugins.'io.containerd.cri.v1.runtime']\n"
                 "  enable_cdi = false\n"
                 "  cdi_spec_dirs = [\"/etc/cdi\",\n    '/var/run/cdi', # comment\n  ]\n");
    assert_string_equal(
        gs_toml_get_str(t, KEY("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes",
                               "nvidia", "options", "BinaryName")),
        "/usr/bin/nvidia-container-runtime");
    const struct gs_toml_entry *a =
        gs_toml_get(t, KEY("plugins", "io.containerd.cri.v1.runtime", "cdi_spec_dirs"));
    assert_non_null(a);
    assert_int_equal(a->type, GS_TOML_ARRAY);
    assert_int_equal(a->nitems, 2);
    assert_string_equal(a->items[0], "/etc/cdi");
    assert_string_equal(a->items[1], "/var/run/cdi");
    const struct gs_toml_entry *e =
        gs_toml_get(t, KEY("plugins", "io.containerd.cri.v1.runtime", "enable_cdi"));
    assert_int_equal(e->type, GS_TOML_BOOL);
    assert_false(e->boolean);
    /* "*" matches any segment */
    assert_non_null(gs_toml_get(t, KEY("plugins", "*", "containerd", "runtimes", "*")));
    gs_toml_free(t);
}

static void test_dotted_and_inline(void **st)
{
    (void)st;
    struct gs_toml *t =
        parse_ok("[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                 "runtimes.nvidia.options.BinaryName = \"/a\"\n"
                 "runtimes . runc = { runtime_type = \"io.containerd.runc.v2\", options = { "
                 "SystemdCgroup = true } }\n"
                 "weird = [ { a = 1 }, [1, 2], \"s\" ]\n");
    const char *pre[] = {"plugins", "io.containerd.grpc.v1.cri", "containerd"};
    (void)pre;
    assert_string_equal(gs_toml_get_str(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd",
                                               "runtimes", "nvidia", "options", "BinaryName")),
                        "/a");
    assert_string_equal(gs_toml_get_str(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd",
                                               "runtimes", "runc", "runtime_type")),
                        "io.containerd.runc.v2");
    const struct gs_toml_entry *b =
        gs_toml_get(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd", "runtimes", "runc",
                           "options", "SystemdCgroup"));
    assert_non_null(b);
    assert_true(b->boolean);
    const struct gs_toml_entry *w =
        gs_toml_get(t, KEY("plugins", "io.containerd.grpc.v1.cri", "containerd", "weird"));
    assert_int_equal(w->nitems, 1);
    assert_int_equal(w->nitems_other, 2);
    gs_toml_free(t);
}

static void test_strings(void **st)
{
    (void)st;
    struct gs_toml *t = parse_ok("a = \"tab\\there \\\"q\\\" \\u00e9 \\U0001F600\"\n"
                                 "b = 'C:\\no\\escapes'\n"
                                 "c = \"\"\"\nline1\nline2 \\\n   joined\"\"\"\n"
                                 "d = '''\nraw \\n ''' # c\n"
                                 "e = \"\"\"two quotes at the end\"\"\"\"\"\n"
                                 "\"quoted key\" = 1\n"
                                 "'' = 2\n");
    assert_string_equal(gs_toml_get_str(t, KEY("a")), "tab\there \"q\" \xc3\xa9 \xf0\x9f\x98\x80");
    assert_string_equal(gs_toml_get_str(t, KEY("b")), "C:\\no\\escapes");
    assert_string_equal(gs_toml_get_str(t, KEY("c")), "line1\nline2 joined");
    assert_string_equal(gs_toml_get_str(t, KEY("d")), "raw \\n ");
    assert_string_equal(gs_toml_get_str(t, KEY("e")), "two quotes at the end\"\"");
    assert_non_null(gs_toml_get(t, KEY("quoted key")));
    assert_non_null(gs_toml_get(t, KEY("")));
    gs_toml_free(t);
}

static void test_numbers_dates(void **st)
{
    (void)st;
    struct gs_toml *t = parse_ok("a = 1_000\nb = -17\nc = 0xff\nd = 0o17\ne = 0b101\n"
                                 "f = 3.14\ng = -inf\nh = 1979-05-27T07:32:00Z\n"
                                 "i = 1979-05-27 07:32:00\nj = 07:32:00\nk = +9223372036854775807\n"
                                 "l = -9223372036854775808\n");
    assert_int_equal(gs_toml_get(t, KEY("a"))->integer, 1000);
    assert_int_equal(gs_toml_get(t, KEY("b"))->integer, -17);
    assert_int_equal(gs_toml_get(t, KEY("c"))->integer, 255);
    assert_int_equal(gs_toml_get(t, KEY("d"))->integer, 15);
    assert_int_equal(gs_toml_get(t, KEY("e"))->integer, 5);
    assert_int_equal(gs_toml_get(t, KEY("f"))->type, GS_TOML_OTHER);
    assert_int_equal(gs_toml_get(t, KEY("g"))->type, GS_TOML_OTHER);
    assert_int_equal(gs_toml_get(t, KEY("h"))->type, GS_TOML_OTHER);
    assert_int_equal(gs_toml_get(t, KEY("i"))->type, GS_TOML_OTHER);
    assert_int_equal(gs_toml_get(t, KEY("k"))->integer, INT64_MAX);
    assert_int_equal(gs_toml_get(t, KEY("l"))->integer, INT64_MIN);
    gs_toml_free(t);
}

static void test_array_tables_and_crlf(void **st)
{
    (void)st;
    struct gs_toml *t = parse_ok("\xEF\xBB\xBF# bom\r\n[[proxy_plugins]]\r\nname = \"x\"\r\n"
                                 "[[proxy_plugins]]\r\nname = \"y\"\r\n");
    assert_string_equal(gs_toml_get_str(t, KEY("proxy_plugins", "name")), "y"); /* last wins */
    gs_toml_free(t);
}

static void test_templates(void **st)
{
    (void)st;
    const char *tmpl = "{{ template \"base\" . }}\n\n"
                       "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia']\n"
                       "  runtime_type = \"io.containerd.runc.v2\"\n"
                       "{{ if .NodeConfig.AgentConfig.Snapshotter }}\n"
                       "  x = \"{{ .NodeConfig.AgentConfig.Snapshotter }}\"\n"
                       "{{ end }}\n";
    struct gs_toml *t = NULL;
    gs_error err = {0};
    int base = 0;
    struct gs_toml_opts o = {.templates = 1, .has_base = &base};
    assert_int_equal(gs_toml_parse(tmpl, strlen(tmpl), "config-v3.toml.tmpl", &o, &t, &err), 0);
    assert_true(base);
    assert_non_null(gs_toml_get(
        t, KEY("plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", "nvidia")));
    gs_toml_free(t);
    /* without the template option, {{ is an error, with the line */
    rejects("a = 1\n{{ template \"base\" . }}\n", "bad.toml:2:");
}

static void test_rejects(void **st)
{
    (void)st;
    rejects("[plugins.\"io.containerd.grpc.v1.cri\"\nx = 1\n", "expected ']'");
    rejects("[[a]\n", "']]'");
    rejects("a = \"unterminated\n", "end of the line");
    rejects("a = \"\"\"never closed\n", "not closed");
    rejects("a = 'x\n", "end of the line");
    rejects("a = bareword\n", "quotes");
    rejects("a = 1 b = 2\n", "after the value");
    rejects("a\n", "'='");
    rejects("= 1\n", "expected a key");
    rejects("a = \"\\q\"\n", "escape");
    rejects("a = \"\\uD800\"\n", "\\u");
    rejects("a = \"\\u12\"\n", "\\u");
    rejects("a = [1, 2\n", "']'");
    rejects("a = { b = 1\n", "'}'");
    rejects("a = 00\n", NULL);
    rejects("a = 0x\n", NULL);
    rejects("a = 1__0\n", NULL);
    rejects("a = 99999999999999999999\n", NULL);
    rejects("a = \"\"\"x\\ y\"\"\"\n", "backslash");
    rejects("'''a''' = 1\n", "multi-line");
    rejects("a = \n", "expected a value");
    rejects("[a.]\n", "expected a key");
    /* NUL byte */
    struct gs_toml *t = NULL;
    gs_error err = {0};
    assert_true(gs_toml_parse("a = \"x\0y\"\n", 10, "nul.toml", NULL, &t, &err) < 0);
    assert_non_null(strstr(err.msg, "NUL"));
    /* err may be NULL */
    assert_true(gs_toml_parse("a = \n", 5, "x", NULL, &t, NULL) < 0);
}

static void test_bounds(void **st)
{
    (void)st;
    /* deep nesting of arrays and inline tables */
    char deep[4096];
    size_t n = 0;
    n += (size_t)snprintf(deep + n, sizeof deep - n, "a = ");
    for (int i = 0; i < 200; i++)
        deep[n++] = '[';
    for (int i = 0; i < 200; i++)
        deep[n++] = ']';
    deep[n++] = '\n';
    deep[n] = '\0';
    rejects(deep, "nested");
    n = (size_t)snprintf(deep, sizeof deep, "a = ");
    for (int i = 0; i < 100; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "{b=");
    n += (size_t)snprintf(deep + n, sizeof deep - n, "1");
    for (int i = 0; i < 100; i++)
        deep[n++] = '}';
    deep[n++] = '\n';
    deep[n] = '\0';
    rejects(deep, NULL);
    /* too many dotted key parts */
    n = 0;
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "k%d.", i);
    n += (size_t)snprintf(deep + n, sizeof deep - n, "z = 1\n");
    rejects(deep, "too many");
    /* a table depth plus a dotted key beyond the bound */
    n = (size_t)snprintf(deep, sizeof deep, "[");
    for (int i = 0; i < 30; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "%st%d", i ? "." : "", i);
    n += (size_t)snprintf(deep + n, sizeof deep - n, "]\na.b.c = 1\n");
    rejects(deep, "deep");
}

/* A real K3s config, cut at every length and mutated at random: the parser
 * must accept or refuse each with a message, and never read out of bounds
 * (ASan in CI) or leak (LeakSanitizer). */
static const char real[] =
    "# File generated by k3s. DO NOT EDIT. Use config-v3.toml.tmpl instead.\n"
    "version = 3\nroot = \"/var/lib/rancher/k3s/agent/containerd\"\n"
    "[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n"
    "  cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia']\n"
    "  runtime_type = \"io.containerd.runc.v2\"\n"
    "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.'nvidia'.options]\n"
    "  BinaryName = \"/usr/bin/nvidia-container-runtime\"\n  SystemdCgroup = true\n"
    "x = { a = [1, 'b', { c = \"\"\"d\"\"\" }], e = 0x1F }\n"
    "s = '''\nlit'''\nu = \"\\u00e9\"\n";

static void test_fuzz_prefixes(void **st)
{
    (void)st;
    size_t len = sizeof real - 1;
    for (size_t cut = 0; cut <= len; cut++) {
        char *buf = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
        memcpy(buf, real, cut);
        struct gs_toml *t = NULL;
        gs_error err = {0};
        int rc = gs_toml_parse(buf, cut, "cut.toml", NULL, &t, &err);
        assert_true(rc == 0 ? t != NULL : (t == NULL && strstr(err.msg, "cut.toml") != NULL));
        gs_toml_free(t);
        free(buf);
    }
    struct gs_toml *t = parse_ok(real);
    gs_toml_free(t);
}

static void test_fuzz_mutations(void **st)
{
    (void)st;
    static const char alphabet[] = "[]{}\"'=.,#\\\n \t{}0x_-+:aZ\r";
    size_t len = sizeof real - 1;
    unsigned seed = 12345;
    for (int iter = 0; iter < 20000; iter++) {
        char *buf = malloc(len);
        memcpy(buf, real, len);
        int muts = 1 + (int)(rand_r(&seed) % 4);
        for (int m = 0; m < muts; m++) {
            size_t at = (size_t)rand_r(&seed) % len;
            buf[at] = (rand_r(&seed) % 4) ? alphabet[(size_t)rand_r(&seed) % (sizeof alphabet - 1)]
                                          : (char)(rand_r(&seed) % 256);
        }
        struct gs_toml *t = NULL;
        gs_error err = {0};
        int rc = gs_toml_parse(buf, len, "fuzz.toml", NULL, &t, &err);
        if (rc != 0 && (t != NULL || !err.msg[0]))
            fail_msg("iteration %d: rc %d without a message", iter, rc);
        gs_toml_free(t);
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_containerd_v2_quoted_headers),
        cmocka_unit_test(test_containerd_v3_literal_headers),
        cmocka_unit_test(test_dotted_and_inline),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_numbers_dates),
        cmocka_unit_test(test_array_tables_and_crlf),
        cmocka_unit_test(test_templates),
        cmocka_unit_test(test_rejects),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_fuzz_prefixes),
        cmocka_unit_test(test_fuzz_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
