/* Quantity parsing: the spellings users type, and hostile input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/quantity.h"

static void parses(const char *s, uint64_t want)
{
    uint64_t v = 0;
    gs_error err = {0};
    int rc = gs_quantity_parse_bytes(s, &v, &err);
    if (rc != 0)
        fail_msg("'%s' rejected: %s", s, err.msg);
    if (v != want)
        fail_msg("'%s' gave %llu, want %llu", s, (unsigned long long)v, (unsigned long long)want);
}

static void rejects(const char *s, int code, const char *needle)
{
    uint64_t v = 12345;
    gs_error err = {0};
    int rc = gs_quantity_parse_bytes(s, &v, &err);
    if (rc != code)
        fail_msg("'%s': rc %d, want %d (%s)", s ? s : "(null)", rc, code, err.msg);
    assert_int_equal(v, 12345); /* output untouched on error */
    if (needle && !strstr(err.msg, needle))
        fail_msg("'%s': message '%s' lacks '%s'", s ? s : "(null)", err.msg, needle);
}

static void test_binary_units(void **st)
{
    (void)st;
    parses("512Mi", 512ull << 20);
    parses("2Gi", 2ull << 30);
    parses("2GiB", 2ull << 30);
    parses("1.5Gi", 3ull << 29);
    parses("1Ti", 1ull << 40);
    parses("4KiB", 4096);
    parses("0.5Mi", 512 * 1024);
}

static void test_decimal_units(void **st)
{
    (void)st;
    parses("2G", 2000000000ull);
    parses("512MB", 512000000ull);
    parses("1k", 1000);
    parses("123", 123);
    parses("123B", 123);
    parses("+7Mi", 7ull << 20);
    parses("0", 0);
}

static void test_fraction_rounds_up(void **st)
{
    (void)st;
    parses("0.1Ki", 103); /* 102.4 rounds up to whole bytes */
    parses("1.000000001G", 1000000001ull);
    parses("0.333333333Ki", 342);
}

static void test_rejects_garbage(void **st)
{
    (void)st;
    rejects("", GS_EINVAL, "empty");
    rejects(NULL, GS_EINVAL, "empty");
    rejects("-1Gi", GS_EINVAL, "negative");
    rejects("Gi", GS_EINVAL, "number");
    rejects("2 Gi", GS_EINVAL, "unit");
    rejects("2Gb", GS_EINVAL, "unit");
    rejects("2Gix", GS_EINVAL, "unit");
    rejects("1.", GS_EINVAL, "digits");
    rejects("1.2.3Gi", GS_EINVAL, NULL);
    rejects("1e9", GS_EINVAL, "unit");
    rejects("0x10", GS_EINVAL, "unit");
    rejects("1.0000000001Gi", GS_EINVAL, "decimals");
    rejects("4Gi\n", GS_EINVAL, "unit");
}

static void test_rejects_overflow(void **st)
{
    (void)st;
    rejects("18446744073709551616", GS_ERANGE, "too large");
    rejects("99999999999999999999999", GS_ERANGE, "too large");
    rejects("16384Pi", GS_ERANGE, "too large");
    rejects("20000P", GS_ERANGE, "too large");
    parses("18446744073709551615", UINT64_MAX);
    parses("15Pi", 15ull << 50);
}

static void test_percent(void **st)
{
    (void)st;
    unsigned v = 0;
    gs_error err;
    assert_int_equal(gs_quantity_parse_percent("30%", &v, &err), 0);
    assert_int_equal(v, 30);
    assert_int_equal(gs_quantity_parse_percent("100", &v, &err), 0);
    assert_int_equal(v, 100);
    assert_int_equal(gs_quantity_parse_percent("0", &v, &err), GS_ERANGE);
    assert_int_equal(gs_quantity_parse_percent("101%", &v, &err), GS_ERANGE);
    assert_int_equal(gs_quantity_parse_percent("99999999999%", &v, &err), GS_ERANGE);
    assert_int_equal(gs_quantity_parse_percent("-5", &v, &err), GS_EINVAL);
    assert_int_equal(gs_quantity_parse_percent("30%%", &v, &err), GS_EINVAL);
    assert_int_equal(gs_quantity_parse_percent("12.5", &v, &err), GS_EINVAL);
    assert_int_equal(gs_quantity_parse_percent("", &v, &err), GS_EINVAL);
    assert_non_null(strstr(err.msg, "1 to 100"));
}

/* A size a person wrote: every unit spelling, and a bare number refused with the hint. */
static void test_size_refuses_bare_numbers(void **st)
{
    (void)st;
    static const struct {
        const char *s;
        uint64_t want;
    } ok[] = {{"2048Mi", 2048ull << 20}, {"2048MiB", 2048ull << 20},
              {"2Gi", 2ull << 30},       {"2GiB", 2ull << 30},
              {"2048B", 2048},           {"1.5Gi", 3ull << 29}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v = 0;
        gs_error err = {0};
        if (gs_quantity_parse_size(ok[i].s, &v, &err) != 0 || v != ok[i].want)
            fail_msg("'%s': %s, %llu", ok[i].s, err.msg, (unsigned long long)v);
    }
    uint64_t v = 7;
    gs_error err = {0};
    assert_int_equal(gs_quantity_parse_size("2048", &v, &err), GS_EINVAL);
    assert_int_equal(v, 7);
    assert_non_null(strstr(err.msg, "'2048' has no unit: write 2048Mi for MiB, or 2048B"));
    assert_int_equal(gs_quantity_parse_size("", &v, &err), GS_EINVAL);
    assert_int_equal(gs_quantity_parse_size("12x", &v, &err), GS_EINVAL);
    assert_non_null(strstr(err.msg, "unknown unit 'x'"));
}

static void test_format(void **st)
{
    (void)st;
    char b[32];
    gs_quantity_format_bytes(4ull << 30, b, sizeof b);
    assert_string_equal(b, "4 GiB");
    gs_quantity_format_bytes(3ull << 29, b, sizeof b);
    assert_string_equal(b, "1.50 GiB");
    gs_quantity_format_bytes(100, b, sizeof b);
    assert_string_equal(b, "100 B");
    gs_quantity_format_bytes(UINT64_MAX, b, sizeof b);
    assert_string_equal(b, "16.00 EiB");
}

/* Every byte string of length <= 3 over a hostile alphabet: never crashes,
 * and whatever parses re-parses to the same value. */
static void test_exhaustive_short_inputs(void **st)
{
    (void)st;
    static const char alpha[] = "0129.-+GiMKBkPTe% \x01\xff";
    size_t na = sizeof alpha - 1;
    char s[4];
    int accepted = 0;
    for (size_t a = 0; a < na; a++)
        for (size_t b = 0; b <= na; b++)
            for (size_t c = 0; c <= na; c++) {
                s[0] = alpha[a];
                s[1] = b < na ? alpha[b] : 0;
                s[2] = (b < na && c < na) ? alpha[c] : 0;
                s[3] = 0;
                uint64_t v;
                gs_error err;
                if (gs_quantity_parse_bytes(s, &v, &err) == 0)
                    accepted++;
                else
                    assert_true(strlen(err.msg) > 0);
            }
    assert_true(accepted > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binary_units),
        cmocka_unit_test(test_decimal_units),
        cmocka_unit_test(test_fraction_rounds_up),
        cmocka_unit_test(test_rejects_garbage),
        cmocka_unit_test(test_rejects_overflow),
        cmocka_unit_test(test_percent),
        cmocka_unit_test(test_size_refuses_bare_numbers),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_exhaustive_short_inputs),
    };
    return cmocka_run_group_tests_name("quantity", tests, NULL, NULL);
}
