/* Shared by the fake libraries' tests: replace the GS_FAKE_* environment.
 * Include after <cmocka.h>. */
#ifndef GS_FAKE_TEST_ENV_H
#define GS_FAKE_TEST_ENV_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unsets vars[0..n), then sets each "VAR=value" of the NULL-terminated list. */
static inline void fake_test_env(const char *const *vars, size_t n, const char *setting, va_list ap)
{
    for (size_t i = 0; i < n; i++)
        unsetenv(vars[i]);
    for (const char *s = setting; s; s = va_arg(ap, const char *)) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s", s);
        char *eq = strchr(buf, '=');
        assert_non_null(eq);
        *eq = '\0';
        setenv(buf, eq + 1, 1);
    }
}

#endif
