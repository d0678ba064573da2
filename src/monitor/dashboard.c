/* The dashboard page, dashboard.html, taken into the binary by the assembler
 * (.incbin: the path is the repository's, where make runs the compiler), so
 * the page stays a file of its own to read and edit; a NUL ends it. */
#include "monitor/dashboard.h"

__asm__(".section .rodata\n"
        ".global gs_dashboard_html\n"
        "gs_dashboard_html:\n"
        ".incbin \"src/monitor/dashboard.html\"\n"
        ".byte 0\n"
        ".previous\n");
