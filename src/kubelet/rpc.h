/* The agent's one small internal API over gRPC C-core (docs/agent.md).
 *
 * Why a wrapper: C-core is a completion-queue API with tags, reference counts
 * and batch rules: nothing public wakes the queue for application events (so
 * gs_rpc_wake uses a connectivity watch that completes at once), one SEND_MESSAGE at a time per
 * call (so ListAndWatch updates are coalesced to the latest list), a RECV_CLOSE_ON_SERVER posted
 * when a call is accepted (so pending sends fail when the kubelet goes), one reference per tag on
 * each call's state, grpc_init() on both sides. Everything the device plugin needs fits in four
 * shapes: a server on a unix socket, unary handlers, one server-streaming method whose sends are
 * coalesced, and a blocking client unary call; the DRA driver adds a fifth, a unary call answered
 * later (gs_rpc_defer, gs_rpc_answer). Nothing outside rpc.c includes a gRPC header.
 *
 * Threading: one thread (the agent's loop) calls gs_rpc_poll; handlers run on
 * it, and gs_rpc_stream_send / gs_rpc_server_* must be called on it too.
 * gs_rpc_call_unary is blocking and may be called from any thread: the agent
 * calls Register from a worker so the loop keeps serving the kubelet's
 * GetDevicePluginOptions that arrives inside Register: the kubelet dials the
 * plugin back and calls it before it answers Register. */
#ifndef GS_AGENT_RPC_H
#define GS_AGENT_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* gRPC status codes we answer with (grpc/status.h values). */
enum {
    GS_RPC_OK = 0,
    GS_RPC_CANCELLED = 1,
    GS_RPC_INVALID_ARGUMENT = 3,
    GS_RPC_NOT_FOUND = 5,
    GS_RPC_ALREADY_EXISTS = 6,
    GS_RPC_RESOURCE_EXHAUSTED = 8,
    GS_RPC_FAILED_PRECONDITION = 9,
    GS_RPC_UNIMPLEMENTED = 12,
    GS_RPC_INTERNAL = 13,
    GS_RPC_UNAVAILABLE = 14,
};

struct gs_rpc;
struct gs_rpc_server;
struct gs_rpc_stream;

/* A reply: bytes the handler allocated with malloc (rpc.c frees them), or a
 * non-OK status with a message that names what was wrong and the fix. */
struct gs_rpc_reply {
    uint8_t *data;
    size_t len;
    int status;
    char msg[512];
    void *call_;   /* rpc.c's: the call being answered (NULL outside a server) */
    int deferred_; /* rpc.c's: gs_rpc_defer was called */
};

/* A handler's answers: a protobuf-c message packed into out, or a status
 * whose message (also logged as a warning) names what was wrong and the fix. */
struct ProtobufCMessage;
void gs_rpc_reply_message(struct gs_rpc_reply *out, const struct ProtobufCMessage *m);
void gs_rpc_reply_error(struct gs_rpc_reply *out, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A unary call answered later: a handler whose answer needs something slow
 * (the API server) calls gs_rpc_defer and returns without a reply; the call
 * stays open until gs_rpc_answer, on the loop thread. NULL where the call
 * cannot wait (a handler called outside a server, for tests): answer now.
 * Every deferred call must be answered before its server is stopped. */
struct gs_rpc_pending;
struct gs_rpc_pending *gs_rpc_defer(struct gs_rpc_reply *out);
/* Sends the answer (rep->data is taken) and lets the call go; a call the peer
 * gave up on meanwhile just ends. */
void gs_rpc_answer(struct gs_rpc_pending *p, struct gs_rpc_reply *rep);

typedef void (*gs_rpc_unary_fn)(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out);
/* A streaming call arrived (its request was read): the handler keeps s and
 * sends on it until closed(s) is called; s is invalid after that. */
typedef void (*gs_rpc_open_fn)(void *ud, struct gs_rpc_stream *s);
typedef void (*gs_rpc_closed_fn)(void *ud, struct gs_rpc_stream *s);

struct gs_rpc_method {
    const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
    gs_rpc_unary_fn unary;
    gs_rpc_open_fn open; /* set for server-streaming methods instead of unary */
    gs_rpc_closed_fn closed;
};

int gs_rpc_create(struct gs_rpc **out, gs_error *err);
/* Stops every server, waits for their calls to end and frees everything. */
void gs_rpc_destroy(struct gs_rpc *r);

/* Serves methods (a table that must outlive the server) on a unix socket. */
int gs_rpc_server_start(struct gs_rpc *r, const char *socket_path,
                        const struct gs_rpc_method *methods, size_t n, void *ud,
                        struct gs_rpc_server **out, gs_error *err);
/* Shuts the server down, cancels its calls (streams get closed()) and waits
 * until C-core has let go of it, so its socket path can be bound again. */
void gs_rpc_server_stop(struct gs_rpc *r, struct gs_rpc_server *s);

/* Handles events for up to timeout_ms (-1: until one comes); returns how
 * many it handled, not counting wakes (gs_rpc_wake). */
int gs_rpc_poll(struct gs_rpc *r, int timeout_ms);
/* Makes a gs_rpc_poll waiting now (or the next one) return soon: for events
 * outside gRPC (a thread finished, a file changed, a signal). Any thread;
 * wakes that come while one is pending merge into it. */
void gs_rpc_wake(struct gs_rpc *r);

/* Queues one message on a stream. At most one send is in flight per call
 * (C-core allows one SEND_MESSAGE at a time); while one is, a newer message replaces the waiting
 * one, so a slow peer gets the latest state and the queue never grows. Copies data. Returns GS_OK,
 * or GS_EIO when the stream has ended. */
int gs_rpc_stream_send(struct gs_rpc_stream *s, const uint8_t *data, size_t len);
/* Messages sent / replaced while waiting (for tests and metrics). */
void gs_rpc_stream_counts(const struct gs_rpc_stream *s, uint64_t *sent, uint64_t *coalesced);

/* Blocking client unary call on "unix:<socket_path>" with a deadline; any
 * thread. On success *resp is malloc'd (may be NULL with *resp_len 0 for an
 * empty message). A non-OK status from the peer gives GS_EPROTO with its
 * message; an unreachable peer gives GS_EIO. */
int gs_rpc_call_unary(const char *socket_path, const char *method, const uint8_t *req,
                      size_t req_len, int timeout_ms, uint8_t **resp, size_t *resp_len,
                      gs_error *err);

#endif
