/* monitor --listen: the dashboard page at /, Prometheus /metrics, the JSON
 * view at /api/slices and the history at /api/history, over libmicrohttpd.
 * The main thread takes a view every interval for the history; each request
 * takes its own (and runs the audit, as a scrape always did). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contract/contract.h"
#include "monitor/dashboard.h"
#include "monitor/history.h"
#include "monitor/metrics.h"
#include "monitor/monitor.h"

struct server {
    struct gs_view_src *src;
    struct gs_monitor_audit *audit;
    struct gs_history history;
    pthread_mutex_t lock; /* the audit's state, between connections */
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned code, const char *type, char *body)
{
    if (!body)
        return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result not_allowed(struct MHD_Connection *c)
{
    /* libmicrohttpd leaves the body out of a HEAD answer itself. */
    static const char msg[] = "only GET and HEAD\n";
    struct MHD_Response *r =
        MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
    MHD_destroy_response(r);
    return ret;
}

/* /metrics and /api/slices: a view of now, with the audit's pass. */
static enum MHD_Result answer_view(struct server *s, struct MHD_Connection *c, int metrics)
{
    struct gs_view v;
    if (gs_view_take(s->src, &v) < 0) {
        gs_view_free(&v);
        return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain",
                     strdup("state root not readable; see the monitor's log\n"));
    }
    pthread_mutex_lock(&s->lock);
    const struct gs_audit *audit = gs_monitor_audit(s->audit, s->src->root, &v);
    char *body = metrics ? gs_metrics_text(&v, audit) : gs_view_json(&v, s->src->root, audit);
    pthread_mutex_unlock(&s->lock);
    gs_view_free(&v);
    return reply(c, MHD_HTTP_OK, metrics ? "text/plain; version=0.0.4" : "application/json", body);
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)state;
    struct server *s = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
        return not_allowed(c);
    if (!strcmp(url, "/metrics"))
        return answer_view(s, c, 1);
    if (!strcmp(url, "/api/slices"))
        return answer_view(s, c, 0);
    if (!strcmp(url, "/api/history"))
        return reply(c, MHD_HTTP_OK, "application/json", gs_history_json(&s->history));
    if (!strcmp(url, "/")) {
        return reply(c, MHD_HTTP_OK, "text/html; charset=utf-8", strdup(gs_dashboard_html));
    }
    return reply(c, MHD_HTTP_NOT_FOUND, "text/plain",
                 strdup("not found: try /, /metrics, /api/slices or /api/history\n"));
}

static volatile sig_atomic_t stop_serving;
static void on_signal(int sig)
{
    (void)sig;
    stop_serving = 1;
}

/* Where to listen, from --listen:
 *   PORT               127.0.0.1 (the loopback only)
 *   :PORT, [::]:PORT   every address of both families (IPv4 too, through
 *                      IPv6's dual stack; IPv4's alone where IPv6 is off)
 *   A.B.C.D:PORT       one IPv4 address (0.0.0.0: all of IPv4)
 *   [V6]:PORT          one IPv6 address */
struct where {
    struct sockaddr_storage sa;
    int v6, dual;
    char host[INET6_ADDRSTRLEN + 2];
};

static int parse_listen(const char *s, struct where *w)
{
    memset(w, 0, sizeof *w);
    char host[INET6_ADDRSTRLEN] = "127.0.0.1";
    const char *port_s = s;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        size_t hl = close ? (size_t)(close - s - 1) : 0;
        if (!close || close[1] != ':' || hl == 0 || hl >= sizeof host)
            return -1;
        memcpy(host, s + 1, hl);
        host[hl] = '\0';
        port_s = close + 2;
        w->v6 = 1;
    } else if (strchr(s, ':')) {
        const char *colon = strchr(s, ':');
        size_t hl = (size_t)(colon - s);
        if (strchr(colon + 1, ':') || hl >= sizeof host)
            return -1; /* an IPv6 address wants brackets */
        memcpy(host, s, hl);
        host[hl] = '\0';
        port_s = colon + 1;
        if (hl == 0) {
            snprintf(host, sizeof host, "::");
            w->v6 = 1;
        }
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    if (!*port_s || *end || port < 0 || port > 65535)
        return -1;
    if (w->v6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&w->sa;
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, host, &a->sin6_addr) != 1)
            return -1;
        w->dual = IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr);
        snprintf(w->host, sizeof w->host, "[%s]", host);
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&w->sa;
        a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, host, &a->sin_addr) != 1)
            return -1;
        snprintf(w->host, sizeof w->host, "%s", host);
    }
    return 0;
}

static struct MHD_Daemon *start(struct where *w, struct server *srv)
{
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD;
    if (w->v6)
        flags |= w->dual ? MHD_USE_DUAL_STACK : MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(flags, 0, NULL, NULL, answer, srv, MHD_OPTION_SOCK_ADDR,
                                            (struct sockaddr *)&w->sa, MHD_OPTION_END);
    if (d || !w->dual)
        return d;
    /* No IPv6 here (a kernel or container without it): all of IPv4. */
    uint16_t port = ((struct sockaddr_in6 *)&w->sa)->sin6_port;
    struct sockaddr_in *a = (struct sockaddr_in *)&w->sa;
    memset(&w->sa, 0, sizeof w->sa);
    a->sin_family = AF_INET;
    a->sin_port = port;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    w->v6 = w->dual = 0;
    snprintf(w->host, sizeof w->host, "0.0.0.0");
    return MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, srv,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&w->sa, MHD_OPTION_END);
}

int gs_serve(const char *listen_on, struct gs_view_src *src, struct gs_monitor_audit *audit,
             int interval_s)
{
    struct where w;
    if (parse_listen(listen_on, &w) < 0) {
        fprintf(stderr,
                "gpuslice monitor: --listen '%s' is not PORT, HOST:PORT or [IPV6]:PORT (like "
                ":%d for every address, 127.0.0.1:%d or [::1]:%d)\n",
                listen_on, GS_MONITOR_PORT, GS_MONITOR_PORT, GS_MONITOR_PORT);
        return 2;
    }
    struct server srv = {.src = src, .audit = audit};
    pthread_mutex_init(&srv.lock, NULL);
    if (gs_history_init(&srv.history, interval_s) < 0) {
        fprintf(stderr, "gpuslice monitor: out of memory for the history\n");
        return 1;
    }
    struct MHD_Daemon *d = start(&w, &srv);
    if (!d) {
        fprintf(stderr, "gpuslice monitor: cannot listen on %s (port in use, or no permission?)\n",
                listen_on);
        gs_history_destroy(&srv.history);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr,
            "gpuslice monitor: serving /, /metrics, /api/slices and /api/history on "
            "http://%s:%u%s\n",
            w.host, info ? (unsigned)info->port : 0u, w.dual ? " (IPv6 and IPv4)" : "");
    struct sigaction act = {0};
    act.sa_handler = on_signal;
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGTERM, &act, NULL);
    while (!stop_serving) {
        struct gs_view v;
        if (gs_view_take(src, &v) == 0)
            gs_history_add(&srv.history, &v);
        gs_view_free(&v);
        struct timespec ts = {interval_s, 0};
        while (!stop_serving && nanosleep(&ts, &ts) != 0 && errno == EINTR)
            ;
    }
    MHD_stop_daemon(d);
    gs_history_destroy(&srv.history);
    return 0;
}
