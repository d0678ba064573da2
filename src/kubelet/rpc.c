/* rpc.c: the agent's wrapper over gRPC C-core 1.51 (see rpc.h).
 *
 * One completion queue serves every server. Each tag points at a small
 * struct that says which operation finished; calls and servers count their
 * outstanding tags and are freed when the count reaches zero (every tag
 * points at the call, so the call must outlive all of them). */
#include "kubelet/rpc.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/log.h>
#include <grpc/support/time.h>
#include <protobuf-c/protobuf-c.h>

#include "common/log.h"

enum tag_kind {
    TAG_NEW_CALL, /* grpc_server_request_call finished */
    TAG_SHUTDOWN, /* grpc_server_shutdown_and_notify finished */
    TAG_RECV,     /* SEND_INITIAL_METADATA (streams) + RECV_MESSAGE */
    TAG_SEND,     /* a stream's SEND_MESSAGE */
    TAG_STATUS,   /* a unary call's reply + status */
    TAG_CLOSE,    /* RECV_CLOSE_ON_SERVER: the call is over */
    TAG_WAKE,     /* gs_rpc_wake: the queue was woken for an outside event */
};

struct rpc_tag {
    enum tag_kind kind;
    void *owner; /* struct rpc_call or struct gs_rpc_server */
};

struct rpc_call {
    struct gs_rpc_server *srv;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array md;
    grpc_byte_buffer *recv;
    grpc_byte_buffer *sendbuf; /* the message in flight */
    grpc_slice status_details;
    int has_status_details;
    int cancelled;
    int refs;
    const struct gs_rpc_method *method;
    /* streaming */
    struct gs_rpc_stream *stream;
    struct rpc_tag t_new, t_recv, t_send, t_status, t_close;
};

struct gs_rpc_stream {
    struct rpc_call *c;
    int open;          /* the handler was told open and not yet closed */
    int send_inflight; /* C-core allows one SEND_MESSAGE in flight per call */
    uint8_t *pending;  /* the latest message waiting for the send slot */
    size_t pending_len;
    int has_pending;
    uint64_t sent, coalesced;
};

struct gs_rpc_server {
    struct gs_rpc *r;
    grpc_server *server;
    const struct gs_rpc_method *methods;
    size_t n;
    void *ud;
    int refs;     /* outstanding request tag + shutdown tag + live calls */
    int stopping; /* shutdown requested */
    int shut;     /* shutdown notified */
    char path[256];
    struct rpc_tag t_shutdown;
    struct gs_rpc_server *next;
};

struct gs_rpc {
    grpc_completion_queue *cq;
    struct gs_rpc_server *servers;
    /* gs_rpc_wake: C-core has no public alarm for C (grpc_alarm is C++), but a
     * connectivity watch posts its tag to the queue as soon as the channel's
     * state differs from the one given. The channel is never used for a call,
     * so it stays IDLE, and a watch "from SHUTDOWN" completes at once. */
    grpc_channel *wake_ch;
    struct rpc_tag t_wake;
    _Atomic int wake_pending; /* one watch in flight at most */
};

static void core_log(gpr_log_func_args *args)
{
    /* C-core writes to stderr on its own; route it through our log. */
    enum gs_log_level lvl = args->severity == GPR_LOG_SEVERITY_ERROR  ? GS_LOG_WARN
                            : args->severity == GPR_LOG_SEVERITY_INFO ? GS_LOG_DEBUG
                                                                      : GS_LOG_DEBUG;
    gs_log(lvl, "grpc: %s (%s:%d)", args->message, args->file, args->line);
}

int gs_rpc_create(struct gs_rpc **out, gs_error *err)
{
    struct gs_rpc *r = calloc(1, sizeof *r);
    if (!r)
        return gs_error_set(err, GS_ENOMEM, "out of memory creating the gRPC hub");
    gpr_set_log_function(core_log);
    grpc_init(); /* without it grpc_server_create segfaults (C-core 1.51) */
    r->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_channel_credentials *cc = grpc_insecure_credentials_create();
    /* A name no one serves; the channel never connects (no call is made). */
    r->wake_ch = grpc_channel_create("unix:/nonexistent/gpuslice-wake", cc, NULL);
    grpc_channel_credentials_release(cc);
    r->t_wake = (struct rpc_tag){TAG_WAKE, r};
    *out = r;
    return GS_OK;
}

void gs_rpc_wake(struct gs_rpc *r)
{
    if (atomic_exchange(&r->wake_pending, 1))
        return; /* a wake is already on its way */
    grpc_channel_watch_connectivity_state(r->wake_ch, GRPC_CHANNEL_SHUTDOWN,
                                          gpr_inf_future(GPR_CLOCK_MONOTONIC), r->cq, &r->t_wake);
}

static void server_unref(struct gs_rpc_server *s)
{
    if (--s->refs > 0)
        return;
    struct gs_rpc *r = s->r;
    for (struct gs_rpc_server **pp = &r->servers; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    grpc_server_destroy(s->server);
    free(s);
}

static void call_free(struct rpc_call *c)
{
    if (c->call)
        grpc_call_unref(c->call);
    grpc_call_details_destroy(&c->details);
    grpc_metadata_array_destroy(&c->md);
    if (c->recv)
        grpc_byte_buffer_destroy(c->recv);
    if (c->sendbuf)
        grpc_byte_buffer_destroy(c->sendbuf);
    if (c->has_status_details)
        grpc_slice_unref(c->status_details);
    if (c->stream) {
        free(c->stream->pending);
        free(c->stream);
    }
    struct gs_rpc_server *s = c->srv;
    free(c);
    server_unref(s);
}

static void call_unref(struct rpc_call *c)
{
    if (--c->refs == 0)
        call_free(c);
}

static void request_next(struct gs_rpc_server *s);

static struct rpc_call *call_new(struct gs_rpc_server *s)
{
    struct rpc_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->srv = s;
    grpc_call_details_init(&c->details);
    grpc_metadata_array_init(&c->md);
    c->t_new = (struct rpc_tag){TAG_NEW_CALL, c};
    c->t_recv = (struct rpc_tag){TAG_RECV, c};
    c->t_send = (struct rpc_tag){TAG_SEND, c};
    c->t_status = (struct rpc_tag){TAG_STATUS, c};
    c->t_close = (struct rpc_tag){TAG_CLOSE, c};
    s->refs++;
    return c;
}

static void request_next(struct gs_rpc_server *s)
{
    if (s->stopping)
        return;
    struct rpc_call *c = call_new(s);
    if (!c) {
        GS_LOGE("out of memory waiting for the next call on %s; the agent stops serving it",
                s->path);
        return;
    }
    c->refs = 1;
    grpc_call_error e = grpc_server_request_call(s->server, &c->call, &c->details, &c->md, s->r->cq,
                                                 s->r->cq, &c->t_new);
    if (e != GRPC_CALL_OK) {
        GS_LOGE("grpc_server_request_call on %s failed (%d)", s->path, (int)e);
        c->call = NULL;
        call_unref(c);
    }
}

static int start_batch(struct rpc_call *c, const grpc_op *ops, size_t n, struct rpc_tag *tag)
{
    c->refs++;
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, tag, NULL);
    if (e != GRPC_CALL_OK) {
        c->refs--;
        GS_LOGW("grpc_call_start_batch failed (%d) on %s", (int)e, c->srv->path);
        return -1;
    }
    return 0;
}

static const struct gs_rpc_method *find_method(struct gs_rpc_server *s, grpc_slice m)
{
    for (size_t i = 0; i < s->n; i++) {
        size_t len = strlen(s->methods[i].path);
        if (GRPC_SLICE_LENGTH(m) == len &&
            !memcmp(GRPC_SLICE_START_PTR(m), s->methods[i].path, len))
            return &s->methods[i];
    }
    return NULL;
}

/* Unary reply, or a bare status when data is NULL. Takes data. */
static void send_reply(struct rpc_call *c, int status, const char *msg, uint8_t *data, size_t len)
{
    grpc_op ops[3];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    n++;
    if (status == GS_RPC_OK) {
        grpc_slice sl = grpc_slice_from_copied_buffer((const char *)data, len);
        c->sendbuf = grpc_raw_byte_buffer_create(&sl, 1);
        grpc_slice_unref(sl);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->sendbuf;
        n++;
    }
    free(data);
    c->status_details = grpc_slice_from_copied_string(msg ? msg : "");
    c->has_status_details = 1;
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = (grpc_status_code)status;
    ops[n].data.send_status_from_server.status_details = &c->status_details;
    n++;
    start_batch(c, ops, n, &c->t_status);
}

static void on_new_call(struct rpc_call *c, int ok)
{
    struct gs_rpc_server *s = c->srv;
    if (!ok) { /* the server is shutting down */
        if (c->call) {
            grpc_call_unref(c->call);
            c->call = NULL;
        }
        call_unref(c);
        return;
    }
    request_next(s);
    /* RECV_CLOSE_ON_SERVER first, so a cancelled call completes every pending
     * tag. */
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->cancelled;
    start_batch(c, &op, 1, &c->t_close);

    c->method = find_method(s, c->details.method);
    if (!c->method) {
        char m[160];
        size_t ml = GRPC_SLICE_LENGTH(c->details.method);
        if (ml >= sizeof m)
            ml = sizeof m - 1;
        memcpy(m, GRPC_SLICE_START_PTR(c->details.method), ml);
        m[ml] = '\0';
        char msg[256];
        snprintf(msg, sizeof msg, "gpuslice agent does not implement %s", m);
        GS_LOGD("%s: %s", s->path, msg);
        send_reply(c, GS_RPC_UNIMPLEMENTED, msg, NULL, 0);
        call_unref(c); /* the request tag's reference */
        return;
    }
    grpc_op ops[2];
    memset(ops, 0, sizeof ops);
    size_t n = 0;
    if (c->method->open) {
        c->stream = calloc(1, sizeof *c->stream);
        if (!c->stream) {
            send_reply(c, GS_RPC_INTERNAL, "agent out of memory", NULL, 0);
            call_unref(c);
            return;
        }
        c->stream->c = c;
        ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    }
    ops[n].op = GRPC_OP_RECV_MESSAGE;
    ops[n].data.recv_message.recv_message = &c->recv;
    n++;
    start_batch(c, ops, n, &c->t_recv);
    call_unref(c); /* the request tag's reference */
}

static void stream_close(struct rpc_call *c)
{
    struct gs_rpc_stream *st = c->stream;
    if (st && st->open) {
        st->open = 0;
        c->method->closed(c->srv->ud, st);
    }
}

static void on_recv(struct rpc_call *c, int ok)
{
    if (!ok || c->cancelled) {
        call_unref(c);
        return;
    }
    uint8_t *data = NULL;
    size_t len = 0;
    if (c->recv) {
        grpc_byte_buffer_reader rd;
        if (grpc_byte_buffer_reader_init(&rd, c->recv)) {
            grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
            len = GRPC_SLICE_LENGTH(all);
            data = malloc(len ? len : 1);
            if (data)
                memcpy(data, GRPC_SLICE_START_PTR(all), len);
            grpc_slice_unref(all);
            grpc_byte_buffer_reader_destroy(&rd);
        }
        grpc_byte_buffer_destroy(c->recv);
        c->recv = NULL;
        if (!data) {
            send_reply(c, GS_RPC_INTERNAL, "agent could not read the request", NULL, 0);
            call_unref(c);
            return;
        }
    }
    if (c->method->open) {
        free(data);
        c->stream->open = 1;
        c->method->open(c->srv->ud, c->stream);
    } else {
        struct gs_rpc_reply rep;
        memset(&rep, 0, sizeof rep);
        rep.call_ = c;
        c->method->unary(c->srv->ud, data ? data : (const uint8_t *)"", len, &rep);
        free(data);
        if (rep.deferred_) {
            call_unref(c); /* gs_rpc_defer holds its own reference */
            return;
        }
        if (rep.status != GS_RPC_OK) {
            free(rep.data);
            rep.data = NULL;
        }
        send_reply(c, rep.status, rep.msg, rep.data, rep.len);
    }
    call_unref(c);
}

static int stream_start_send(struct gs_rpc_stream *st, const uint8_t *data, size_t len)
{
    struct rpc_call *c = st->c;
    grpc_slice sl = grpc_slice_from_copied_buffer((const char *)data, len);
    if (c->sendbuf)
        grpc_byte_buffer_destroy(c->sendbuf);
    c->sendbuf = grpc_raw_byte_buffer_create(&sl, 1);
    grpc_slice_unref(sl);
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_SEND_MESSAGE;
    op.data.send_message.send_message = c->sendbuf;
    if (start_batch(c, &op, 1, &c->t_send) < 0)
        return GS_EIO;
    st->send_inflight = 1;
    st->sent++;
    return GS_OK;
}

int gs_rpc_stream_send(struct gs_rpc_stream *st, const uint8_t *data, size_t len)
{
    if (!st->open)
        return GS_EIO;
    if (!st->send_inflight)
        return stream_start_send(st, data, len);
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return GS_ENOMEM;
    memcpy(copy, data, len);
    if (st->has_pending)
        st->coalesced++;
    free(st->pending);
    st->pending = copy;
    st->pending_len = len;
    st->has_pending = 1;
    return GS_OK;
}

void gs_rpc_stream_counts(const struct gs_rpc_stream *s, uint64_t *sent, uint64_t *coalesced)
{
    *sent = s->sent;
    *coalesced = s->coalesced;
}

static void on_send(struct rpc_call *c, int ok)
{
    struct gs_rpc_stream *st = c->stream;
    st->send_inflight = 0;
    if (!ok) {
        stream_close(c); /* the peer went away */
    } else if (st->has_pending && st->open) {
        st->has_pending = 0;
        uint8_t *p = st->pending;
        st->pending = NULL;
        if (stream_start_send(st, p, st->pending_len) < 0)
            stream_close(c);
        free(p);
    }
    call_unref(c);
}

static void on_close(struct rpc_call *c)
{
    stream_close(c);
    call_unref(c);
}

static void dispatch(struct rpc_tag *t, int ok)
{
    switch (t->kind) {
    case TAG_NEW_CALL: on_new_call(t->owner, ok); break;
    case TAG_RECV: on_recv(t->owner, ok); break;
    case TAG_SEND: on_send(t->owner, ok); break;
    case TAG_STATUS: call_unref(t->owner); break;
    case TAG_CLOSE: on_close(t->owner); break;
    case TAG_WAKE: atomic_store(&((struct gs_rpc *)t->owner)->wake_pending, 0); break;
    case TAG_SHUTDOWN: {
        struct gs_rpc_server *s = t->owner;
        s->shut = 1;
        server_unref(s);
        break;
    }
    }
}

int gs_rpc_poll(struct gs_rpc *r, int timeout_ms)
{
    int handled = 0;
    gpr_timespec deadline = timeout_ms < 0
                                ? gpr_inf_future(GPR_CLOCK_MONOTONIC)
                                : gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                                               gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(r->cq, deadline, NULL);
        if (ev.type != GRPC_OP_COMPLETE)
            return handled;
        handled += ((struct rpc_tag *)ev.tag)->kind != TAG_WAKE;
        dispatch(ev.tag, ev.success);
        /* After the first event, take what is ready without waiting again. */
        deadline = gpr_inf_past(GPR_CLOCK_MONOTONIC);
    }
}

int gs_rpc_server_start(struct gs_rpc *r, const char *socket_path,
                        const struct gs_rpc_method *methods, size_t n, void *ud,
                        struct gs_rpc_server **out, gs_error *err)
{
    struct gs_rpc_server *s = calloc(1, sizeof *s);
    if (!s)
        return gs_error_set(err, GS_ENOMEM, "out of memory starting a server on %s", socket_path);
    int pl = snprintf(s->path, sizeof s->path, "%s", socket_path);
    if (pl < 0 || (size_t)pl >= sizeof s->path || pl >= 100) {
        free(s);
        /* sun_path is 108 bytes; leave room for "unix:" handling. */
        return gs_error_set(err, GS_ERANGE,
                            "socket path '%s' is too long for a unix socket (at most 100 "
                            "characters); choose a shorter --kubelet-dir",
                            socket_path);
    }
    s->r = r;
    s->methods = methods;
    s->n = n;
    s->ud = ud;
    s->t_shutdown = (struct rpc_tag){TAG_SHUTDOWN, s};
    s->server = grpc_server_create(NULL, NULL);
    grpc_server_register_completion_queue(s->server, r->cq, NULL);
    char addr[300];
    snprintf(addr, sizeof addr, "unix:%s", socket_path);
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    int port = grpc_server_add_http2_port(s->server, addr, creds);
    grpc_server_credentials_release(creds);
    if (port == 0) {
        grpc_server_destroy(s->server);
        free(s);
        return gs_error_set(err, GS_EIO,
                            "cannot listen on %s (a regular file in the way, or the directory is "
                            "not writable?); remove it or choose another --kubelet-dir",
                            socket_path);
    }
    grpc_server_start(s->server);
    s->refs = 1; /* dropped when shutdown is notified */
    s->next = r->servers;
    r->servers = s;
    request_next(s);
    *out = s;
    return GS_OK;
}

static int server_alive(struct gs_rpc *r, struct gs_rpc_server *s)
{
    for (struct gs_rpc_server *p = r->servers; p; p = p->next)
        if (p == s)
            return 1;
    return 0;
}

void gs_rpc_server_stop(struct gs_rpc *r, struct gs_rpc_server *s)
{
    if (!s || !server_alive(r, s))
        return;
    if (!s->stopping) {
        s->stopping = 1;
        grpc_server_shutdown_and_notify(s->server, r->cq, &s->t_shutdown);
        grpc_server_cancel_all_calls(s->server);
    }
    while (server_alive(r, s))
        gs_rpc_poll(r, 100);
}

void gs_rpc_destroy(struct gs_rpc *r)
{
    if (!r)
        return;
    while (r->servers)
        gs_rpc_server_stop(r, r->servers);
    while (atomic_load(&r->wake_pending))
        gs_rpc_poll(r, 100); /* the watch's tag must come back before the queue goes */
    grpc_channel_destroy(r->wake_ch);
    grpc_completion_queue_shutdown(r->cq);
    for (;;) {
        grpc_event ev = grpc_completion_queue_next(r->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type == GRPC_OP_COMPLETE)
            dispatch(ev.tag, ev.success);
    }
    grpc_completion_queue_destroy(r->cq);
    grpc_shutdown();
    free(r);
}

int gs_rpc_call_unary(const char *socket_path, const char *method, const uint8_t *req,
                      size_t req_len, int timeout_ms, uint8_t **resp, size_t *resp_len,
                      gs_error *err)
{
    *resp = NULL;
    *resp_len = 0;
    grpc_init();
    char target[300];
    snprintf(target, sizeof target, "unix:%s", socket_path);
    grpc_channel_credentials *cc = grpc_insecure_credentials_create();
    grpc_channel *ch = grpc_channel_create(target, cc, NULL);
    grpc_channel_credentials_release(cc);
    grpc_completion_queue *cq = grpc_completion_queue_create_for_pluck(NULL);
    gpr_timespec deadline =
        gpr_time_add(gpr_now(GPR_CLOCK_REALTIME), gpr_time_from_millis(timeout_ms, GPR_TIMESPAN));
    grpc_slice msl = grpc_slice_from_copied_string(method);
    grpc_call *call =
        grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, msl, NULL, deadline, NULL);
    grpc_slice_unref(msl);

    grpc_slice body = grpc_slice_from_copied_buffer((const char *)req, req_len);
    grpc_byte_buffer *sendbuf = grpc_raw_byte_buffer_create(&body, 1);
    grpc_slice_unref(body);
    grpc_byte_buffer *recvbuf = NULL;
    grpc_metadata_array md_init, md_trail;
    grpc_metadata_array_init(&md_init);
    grpc_metadata_array_init(&md_trail);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();

    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    /* Wait for the socket to accept until the deadline instead of failing at
     * once: the kubelet may be a moment behind its kubelet.sock. */
    ops[0].flags =
        GRPC_INITIAL_METADATA_WAIT_FOR_READY | GRPC_INITIAL_METADATA_WAIT_FOR_READY_EXPLICITLY_SET;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = sendbuf;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &md_init;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recvbuf;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &md_trail;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;

    int rc = GS_OK;
    int tag = 1;
    grpc_call_error ce = grpc_call_start_batch(call, ops, 6, &tag, NULL);
    if (ce != GRPC_CALL_OK) {
        rc = gs_error_set(err, GS_EIO, "%s on %s: cannot start the call (%d)", method, socket_path,
                          (int)ce);
    } else {
        grpc_event ev =
            grpc_completion_queue_pluck(cq, &tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE || !ev.success) {
            rc = gs_error_set(err, GS_EIO, "%s on %s did not complete", method, socket_path);
        } else if (status != GRPC_STATUS_OK) {
            int dl = (int)GRPC_SLICE_LENGTH(details);
            rc = gs_error_set(err,
                              status == GRPC_STATUS_UNAVAILABLE ||
                                      status == GRPC_STATUS_DEADLINE_EXCEEDED
                                  ? GS_EIO
                                  : GS_EPROTO,
                              "%s on %s failed with gRPC status %d: %.*s", method, socket_path,
                              (int)status, dl, (const char *)GRPC_SLICE_START_PTR(details));
        } else if (recvbuf) {
            grpc_byte_buffer_reader rd;
            if (grpc_byte_buffer_reader_init(&rd, recvbuf)) {
                grpc_slice all = grpc_byte_buffer_reader_readall(&rd);
                size_t len = GRPC_SLICE_LENGTH(all);
                *resp = malloc(len ? len : 1);
                if (*resp) {
                    memcpy(*resp, GRPC_SLICE_START_PTR(all), len);
                    *resp_len = len;
                } else {
                    rc = gs_error_set(err, GS_ENOMEM, "out of memory reading the %s reply", method);
                }
                grpc_slice_unref(all);
                grpc_byte_buffer_reader_destroy(&rd);
            }
        }
    }
    if (recvbuf)
        grpc_byte_buffer_destroy(recvbuf);
    grpc_byte_buffer_destroy(sendbuf);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&md_init);
    grpc_metadata_array_destroy(&md_trail);
    grpc_call_unref(call);
    grpc_completion_queue_shutdown(cq);
    while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
           GRPC_QUEUE_SHUTDOWN)
        ;
    grpc_completion_queue_destroy(cq);
    grpc_channel_destroy(ch);
    grpc_shutdown();
    return rc;
}

/* ---- replies ---------------------------------------------------------------- */

struct gs_rpc_pending *gs_rpc_defer(struct gs_rpc_reply *out)
{
    struct rpc_call *c = out->call_;
    if (!c)
        return NULL;
    c->refs++;
    out->deferred_ = 1;
    return (struct gs_rpc_pending *)c;
}

void gs_rpc_answer(struct gs_rpc_pending *p, struct gs_rpc_reply *rep)
{
    struct rpc_call *c = (struct rpc_call *)p;
    if (rep->status != GS_RPC_OK) {
        free(rep->data);
        rep->data = NULL;
    }
    send_reply(c, rep->status, rep->msg, rep->data, rep->len);
    rep->data = NULL;
    call_unref(c);
}

void gs_rpc_reply_error(struct gs_rpc_reply *out, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->msg, sizeof out->msg, fmt, ap);
    va_end(ap);
    out->status = status;
    GS_LOGW("%s", out->msg);
}

void gs_rpc_reply_message(struct gs_rpc_reply *out, const struct ProtobufCMessage *m)
{
    size_t len = protobuf_c_message_get_packed_size(m);
    out->data = malloc(len ? len : 1);
    if (!out->data) {
        gs_rpc_reply_error(out, GS_RPC_INTERNAL, "agent out of memory encoding a reply");
        return;
    }
    out->len = protobuf_c_message_pack(m, out->data);
    out->status = GS_RPC_OK;
}
