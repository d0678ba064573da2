/* The facts as our own header states them. */
#include "common/gs_cuda.h"
#include "values.h"

#define ROW(name, expr) {#name, (unsigned long long)(expr)},
const struct gs_decl_value gs_decl_ours[] = {GS_DECL_VALUES(ROW){0, 0}};
