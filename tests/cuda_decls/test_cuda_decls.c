/* Our CUDA declarations (src/common/gs_cuda.h, gs_cuda_hooks.h) against the
 * real cuda.h: every layout and value in values.h must match, and every
 * hooked signature was checked when real.c compiled. Skipped (77) where the
 * toolkit is not installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "values.h"

extern const struct gs_decl_value gs_decl_ours[];
#ifdef GS_HAVE_CUDA_H
extern const struct gs_decl_value gs_decl_real[];
extern const int gs_decl_real_version;

static void test_values_match(void **st)
{
    (void)st;
    int n = 0;
    for (int i = 0; gs_decl_ours[i].name; i++, n++) {
        assert_string_equal(gs_decl_ours[i].name, gs_decl_real[i].name);
        if (gs_decl_ours[i].value != gs_decl_real[i].value)
            fail_msg("%s: ours %llu, cuda.h %llu", gs_decl_ours[i].name, gs_decl_ours[i].value,
                     gs_decl_real[i].value);
    }
    assert_true(n > 40);
    print_message("%d layouts and values match cuda.h %d\n", n, gs_decl_real_version);
}
#endif

int main(void)
{
#ifndef GS_HAVE_CUDA_H
    printf("1..0 # SKIP no /usr/local/cuda/include/cuda.h on this machine\n");
    return 77;
#else
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_values_match)};
    return cmocka_run_group_tests_name("cuda_decls", tests, NULL, NULL);
#endif
}
