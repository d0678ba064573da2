/* A read-only Kubernetes API client for the doctor: credentials from a
 * kubeconfig (token or client certificate, CA inline or by path) or the
 * in-cluster service account; GET with timeouts and TLS verification; list
 * calls follow `continue` pages. Only GET is ever sent. */
#ifndef GS_KUBE_H
#define GS_KUBE_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/error.h"
#include "doctor/doctor.h"

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
};

/* Finds credentials: --kubeconfig, $KUBECONFIG (first file), the in-cluster
 * service account under root, K3s's /etc/rancher/k3s/k3s.yaml (real root only).
 * GS_ENOENT with err naming what was tried when there are none. */
int gs_kube_open(const struct gs_doctor *d, struct gs_kube *k, gs_error *err);
void gs_kube_close(struct gs_kube *k);
/* GETs a list (all pages); *items is a cJSON array the caller deletes.
 * *status is the HTTP status (0 when no answer came). */
int gs_kube_list(struct gs_kube *k, const char *path, cJSON **items, long *status, gs_error *err);
/* Decodes base64 (whitespace ignored); returns malloc'd bytes or NULL when invalid. */
char *gs_kube_base64(const char *in, size_t *outlen);

#endif
