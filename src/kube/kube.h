/* A small Kubernetes API client for the doctor and the kubectl plugin:
 * credentials from a kubeconfig (token or client certificate, CA inline or by
 * path) or the in-cluster service account; GET with timeouts and TLS
 * verification; list calls follow `continue` pages; exec over a WebSocket.
 * The doctor and the kubectl plugin only read (GET; the doctor's tests check
 * it); the agent alone writes: its own Node's labels (PATCH) and, in DRA mode,
 * its ResourceSlices (POST, PUT). */
#ifndef GS_KUBE_H
#define GS_KUBE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/error.h"

struct gs_kube_blob {
    char *data;
    size_t len;
};

struct gs_kube {
    char server[1024]; /* https://host:port, no trailing '/' */
    char origin[1200]; /* where the credentials came from, for the report */
    char *token;
    struct gs_kube_blob ca, cert, key;
    int insecure; /* insecure-skip-tls-verify: true in the kubeconfig (reported) */
    void *curl;
    char agent[64]; /* User-Agent */
};

struct gs_kube_opts {
    const char *kubeconfig; /* --kubeconfig, or NULL */
    const char *context;    /* --context: a context other than current-context, or NULL */
    const char *root;       /* prefix for the in-cluster service account files ("" = /) */
    const char *agent;      /* User-Agent, e.g. "gpuslice-doctor" */
};

/* Finds credentials: o->kubeconfig, $KUBECONFIG (first file), the in-cluster
 * service account under o->root, K3s's /etc/rancher/k3s/k3s.yaml (real root only).
 * GS_ENOENT with err naming what was tried when there are none. */
int gs_kube_open(struct gs_kube *k, const struct gs_kube_opts *o, gs_error *err);
void gs_kube_close(struct gs_kube *k);
/* GETs a list (all pages); *items is a cJSON array the caller deletes.
 * *status is the HTTP status (0 when no answer came). */
int gs_kube_list(struct gs_kube *k, const char *path, cJSON **items, long *status, gs_error *err);
/* GETs one object (path may carry a query); *out is the parsed JSON. */
int gs_kube_get(struct gs_kube *k, const char *path, cJSON **out, long *status, gs_error *err);
/* PATCHes path with a JSON merge patch (RFC 7386). */
int gs_kube_patch(struct gs_kube *k, const char *path, const char *merge_patch, long *status,
                  gs_error *err);
/* Sends a whole object: method "POST" (create) or "PUT" (replace) with a JSON
 * body, or "DELETE" (body NULL). *out (when out is not NULL): the answer's JSON,
 * which the caller deletes. The agent's DRA mode publishes its ResourceSlices so. */
int gs_kube_send(struct gs_kube *k, const char *method, const char *path, const char *body,
                 cJSON **out, long *status, gs_error *err);
/* Receives a command's output: stream 1 (stdout) or 2 (stderr); < 0 stops. */
typedef int (*gs_kube_sink)(int stream, const char *buf, size_t len, void *ud);
/* Runs the command that path names (.../pods/<pod>/exec?container=..&command=..
 * &stdout=true&stderr=true) over a WebSocket, hands its output to sink as it
 * comes, and sets *exit_code to its exit status. A command that could not be
 * started (no such container) is an error with the API server's message. */
int gs_kube_exec(struct gs_kube *k, const char *path, gs_kube_sink sink, void *ud, int *exit_code,
                 gs_error *err);
/* s escaped for a URL's query or path (malloc'd; NULL when out of memory). */
char *gs_kube_escape(const char *s);
/* Decodes base64 (whitespace ignored); returns malloc'd bytes or NULL when invalid. */
char *gs_kube_base64(const char *in, size_t *outlen);

#endif
