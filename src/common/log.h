/* Logging: one line per message, "gpuslice[<component> <pid>] <level>: text",
 * always to stderr or a file, never stdout (the interposer lives inside the
 * user's process, whose stdout may be a data stream). The level comes from
 * GPUSLICE_LOG_LEVEL (error, warn, info, debug; default info). */
#ifndef GS_LOG_H
#define GS_LOG_H

enum gs_log_level { GS_LOG_ERROR = 0, GS_LOG_WARN = 1, GS_LOG_INFO = 2, GS_LOG_DEBUG = 3 };

/* Sets the component name shown in each line (static string) and reads the
 * level from the environment. Safe to call more than once. */
/* The level every part reads from its environment: error | warn | info | debug
 * (part of the node contract, listed in contract/contract.h). */
#define GS_ENV_LOG_LEVEL "GPUSLICE_LOG_LEVEL"
void gs_log_init(const char *component);
/* Sends lines to fd instead of stderr (e.g. a log file in the state dir). */
void gs_log_set_fd(int fd);
void gs_log_set_level(enum gs_log_level level);
int gs_log_enabled(enum gs_log_level level);
/* Parses "error|warn|info|debug"; returns -1 when unknown. */
int gs_log_level_parse(const char *s);
void gs_log(enum gs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define GS_LOGE(...) gs_log(GS_LOG_ERROR, __VA_ARGS__)
#define GS_LOGW(...) gs_log(GS_LOG_WARN, __VA_ARGS__)
#define GS_LOGI(...) gs_log(GS_LOG_INFO, __VA_ARGS__)
#define GS_LOGD(...) gs_log(GS_LOG_DEBUG, __VA_ARGS__)

#endif
