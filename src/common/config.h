/* Table-driven configuration (the redis model): one table lists each key with
 * its type, bounds, default, target field and help; it drives parsing of
 * "key=value" text, defaults, validation and `--help` output alike.
 * Depends on libc alone: the interposer uses it for its limits file. */
#ifndef GS_CONFIG_H
#define GS_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

enum gs_cfg_type {
    GS_CFG_BYTES,   /* uint64_t, a memory quantity like 2Gi */
    GS_CFG_PERCENT, /* unsigned, 1..100 */
    GS_CFG_UINT,    /* uint64_t within [min, max] */
    GS_CFG_BOOL,    /* int, true/false/1/0/yes/no */
    GS_CFG_STRING,  /* char[max], max = buffer size */
    GS_CFG_ENUM,    /* int index into choices (a '|'-separated list) */
};

struct gs_cfg_entry {
    const char *name;
    enum gs_cfg_type type;
    size_t offset;
    uint64_t min, max;
    const char *def;     /* default as text, parsed like user input; NULL = zero */
    const char *choices; /* GS_CFG_ENUM only: "share|cap" */
    const char *help;
};

#define GS_CFG_N(tab) (sizeof(tab) / sizeof((tab)[0]))

int gs_config_defaults(const struct gs_cfg_entry *tab, size_t n, void *obj, gs_error *err);
int gs_config_set(const struct gs_cfg_entry *tab, size_t n, void *obj, const char *name,
                  const char *value, gs_error *err);
/* Calls fn with each "key = value" line of text, key and value trimmed: '#' starts
 * a comment, blank lines are skipped, a line without '=' is an error. fn returning
 * < 0 stops the walk; errors name origin and the line. Returns GS_OK or fn's code. */
typedef int (*gs_config_line_fn)(void *ud, const char *key, const char *value, gs_error *err);
int gs_config_each(const char *text, const char *origin, gs_config_line_fn fn, void *ud,
                   gs_error *err);
/* Parses "key = value" lines (gs_config_each) into obj through the table. */
int gs_config_parse_text(const struct gs_cfg_entry *tab, size_t n, void *obj, const char *text,
                         const char *origin, gs_error *err);
/* Reads at most 64 KiB from path and parses it. */
int gs_config_load_file(const struct gs_cfg_entry *tab, size_t n, void *obj, const char *path,
                        gs_error *err);
void gs_config_help(const struct gs_cfg_entry *tab, size_t n, FILE *out);
/* Writes every setting of obj as "name = value" lines that gs_config_parse_text
 * reads back; -1 (errno EINVAL) if a field holds no valid value (an enum out of range). */
int gs_config_write(const struct gs_cfg_entry *tab, size_t n, const void *obj, FILE *out);
/* The name an enum setting's value idx has (copied into buf); NULL if none. */
const char *gs_config_enum_name(const struct gs_cfg_entry *tab, size_t n, const char *key, int idx,
                                char *buf, size_t len);

#endif
