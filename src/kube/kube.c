/* The API client of the doctor and the kubectl plugin (kube.h). TLS goes through libcurl with the
 * CA and client certificate handed over as in-memory blobs (CURLOPT_*_BLOB, curl 7.77+), so no
 * secret is ever written to a temporary file. */
#define _GNU_SOURCE /* asprintf */
#include "kube/kube.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/sha.h>

#include "common/file.h"
#include "kube/yamljson.h"

#define MAX_BODY (64u << 20) /* one page of a list; a cluster's Pods fit many times over */
#define MAX_PAGES 1000

char *gs_kube_base64(const char *in, size_t *outlen)
{
    size_t n = strlen(in);
    char *out = malloc(n / 4 * 3 + 4);
    if (!out)
        return NULL;
    unsigned acc = 0;
    int bits = 0, pad = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+')
            v = 62;
        else if (c == '/')
            v = 63;
        else if (c == '=') {
            pad++;
            continue;
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        else
            v = -1;
        if (v < 0 || pad) { /* a bad character, or data after padding */
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xFF);
        }
    }
    out[o] = '\0';
    *outlen = o;
    return out;
}

static int read_blob(const char *path, struct gs_kube_blob *b, const char *what, gs_error *err)
{
    int rc = gs_file_read(path, 1u << 20, &b->data, &b->len, err);
    if (rc < 0)
        return gs_error_wrap(err, "reading the %s", what);
    return 0;
}

/* value from "<key>-data" (base64) or "<key>" (a path, relative to the kubeconfig's folder) */
static int load_pem(const cJSON *obj, const char *key, const char *dir, struct gs_kube_blob *b,
                    const char *file, gs_error *err)
{
    char dkey[64];
    snprintf(dkey, sizeof dkey, "%s-data", key);
    const char *data = gs_yamljson_str(obj, dkey);
    if (data) {
        b->data = gs_kube_base64(data, &b->len);
        if (!b->data)
            return gs_error_set(err, GS_EINVAL, "%s: %s is not valid base64", file, dkey);
        return 0;
    }
    const char *path = gs_yamljson_str(obj, key);
    if (!path)
        return 0;
    char full[PATH_MAX];
    if (path[0] == '/')
        snprintf(full, sizeof full, "%s", path);
    else
        snprintf(full, sizeof full, "%s/%s", dir, path);
    return read_blob(full, b, key, err);
}

/* The named entry of a kubeconfig list ("clusters", "users", "contexts"), its inner object. */
static const cJSON *named(const cJSON *cfg, const char *list, const char *name, const char *inner)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(cfg, list))
    {
        const char *n = gs_yamljson_str(e, "name");
        if (n && name && !strcmp(n, name))
            return cJSON_GetObjectItemCaseSensitive(e, inner);
    }
    return NULL;
}

static int load_kubeconfig(struct gs_kube *k, const char *file, const char *context, gs_error *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc = gs_file_read(file, 4u << 20, &text, &len, err);
    if (rc < 0)
        return rc == GS_ENOENT ? gs_error_set(err, GS_EINVAL, "kubeconfig %s does not exist", file)
                               : rc;
    cJSON *cfg = NULL;
    rc = gs_yamljson_parse(text, len, file, &cfg, err);
    free(text);
    if (rc < 0)
        return rc;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    const char *cur = context ? context : gs_yamljson_str(cfg, "current-context");
    const cJSON *ctx = named(cfg, "contexts", cur, "context");
    if (!ctx && !cur) { /* no current-context: the only context there is */
        const cJSON *first =
            cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(cfg, "contexts"), 0);
        ctx = cJSON_GetObjectItemCaseSensitive(first, "context");
    }
    const cJSON *cluster =
        ctx ? named(cfg, "clusters", gs_yamljson_str(ctx, "cluster"), "cluster") : NULL;
    const cJSON *user = ctx ? named(cfg, "users", gs_yamljson_str(ctx, "user"), "user") : NULL;
    const char *server = cluster ? gs_yamljson_str(cluster, "server") : NULL;
    rc = 0;
    if (!ctx)
        rc =
            gs_error_set(err, GS_EINVAL, "%s: context '%s' not found (kubectl config get-contexts)",
                         file, cur ? cur : "(none)");
    else if (!server)
        rc = gs_error_set(err, GS_EINVAL, "%s: the context's cluster has no server", file);
    else if (user && (cJSON_GetObjectItemCaseSensitive(user, "exec") ||
                      cJSON_GetObjectItemCaseSensitive(user, "auth-provider")))
        rc = gs_error_set(err, GS_ENOTSUP,
                          "%s: the user authenticates through an exec/auth-provider plugin, which "
                          "the doctor does not run; use a token or client-certificate kubeconfig",
                          file);
    if (rc == 0) {
        snprintf(k->server, sizeof k->server, "%s", server);
        size_t l = strlen(k->server);
        while (l > 0 && k->server[l - 1] == '/')
            k->server[--l] = '\0';
        const char *insecure = gs_yamljson_str(cluster, "insecure-skip-tls-verify");
        k->insecure = insecure && !strcmp(insecure, "true");
        rc = load_pem(cluster, "certificate-authority", dir, &k->ca, file, err);
    }
    if (rc == 0 && user) {
        rc = load_pem(user, "client-certificate", dir, &k->cert, file, err);
        if (rc == 0)
            rc = load_pem(user, "client-key", dir, &k->key, file, err);
        const char *tok = gs_yamljson_str(user, "token");
        const char *tokfile = gs_yamljson_str(user, "tokenFile");
        if (rc == 0 && tok) {
            k->token = strdup(tok);
        } else if (rc == 0 && tokfile) {
            struct gs_kube_blob b = {0};
            rc = read_blob(tokfile, &b, "tokenFile", err);
            k->token = b.data;
        }
    }
    if (rc == 0)
        snprintf(k->origin, sizeof k->origin, "kubeconfig %s, context %s", file,
                 cur ? cur : "(first)");
    cJSON_Delete(cfg);
    return rc;
}

static int rooted(const char *root, const char *abs, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s%s", root, abs);
    return n < 0 || (size_t)n >= len ? GS_ERANGE : 0;
}

static int load_incluster(const char *root, struct gs_kube *k, gs_error *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST");
    const char *port = getenv("KUBERNETES_SERVICE_PORT");
    char tok[PATH_MAX], ca[PATH_MAX];
    struct stat st;
    if (!host || !*host ||
        rooted(root, "/var/run/secrets/kubernetes.io/serviceaccount/token", tok, sizeof tok) ||
        rooted(root, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", ca, sizeof ca))
        return GS_ENOENT;
    /* Under a root (a fixture, or the host mounted into the agent's Pod) the
     * service account may be the one of the Pod we run in, which is not under it. */
    if (stat(tok, &st) != 0 &&
        (!root[0] ||
         rooted("", "/var/run/secrets/kubernetes.io/serviceaccount/token", tok, sizeof tok) ||
         rooted("", "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", ca, sizeof ca) ||
         stat(tok, &st) != 0))
        return GS_ENOENT;
    snprintf(k->server, sizeof k->server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s",
             host, port && *port ? port : "443");
    struct gs_kube_blob t = {0};
    int rc = read_blob(tok, &t, "service account token", err);
    if (rc < 0)
        return rc;
    k->token = t.data;
    for (size_t i = t.len; i > 0 && (k->token[i - 1] == '\n' || k->token[i - 1] == ' '); i--)
        k->token[i - 1] = '\0';
    rc = read_blob(ca, &k->ca, "service account ca.crt", err);
    if (rc == 0)
        snprintf(k->origin, sizeof k->origin, "in-cluster service account, %s", k->server);
    return rc;
}

int gs_kube_open(struct gs_kube *k, const struct gs_kube_opts *o, gs_error *err)
{
    memset(k, 0, sizeof *k);
    const char *root = o->root ? o->root : "";
    snprintf(k->agent, sizeof k->agent, "%s", o->agent ? o->agent : "gpuslice");
    struct stat st;
    int rc = GS_ENOENT;
    if (o->kubeconfig) {
        rc = load_kubeconfig(k, o->kubeconfig, o->context, err);
    } else if (getenv("KUBECONFIG") && *getenv("KUBECONFIG")) {
        /* kubectl merges a list; we read its first file and say so */
        char first[PATH_MAX];
        snprintf(first, sizeof first, "%s", getenv("KUBECONFIG"));
        first[strcspn(first, ":")] = '\0';
        rc = load_kubeconfig(k, first, o->context, err);
    } else {
        rc = load_incluster(root, k, err);
        if (rc == GS_ENOENT && !root[0] && stat("/etc/rancher/k3s/k3s.yaml", &st) == 0)
            rc = load_kubeconfig(k, "/etc/rancher/k3s/k3s.yaml", o->context, err);
        if (rc == GS_ENOENT)
            gs_error_set(err, GS_ENOENT,
                         "no --kubeconfig, no $KUBECONFIG, no in-cluster service account "
                         "(KUBERNETES_SERVICE_HOST and %s/var/run/secrets/kubernetes.io/"
                         "serviceaccount/token)",
                         root);
    }
    if (rc < 0) {
        gs_kube_close(k);
        return rc;
    }
    static int curl_ready;
    if (!curl_ready) {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            gs_kube_close(k);
            return gs_error_set(err, GS_EIO, "libcurl failed to start (curl_global_init)");
        }
        curl_ready = 1;
    }
    k->curl = curl_easy_init();
    if (!k->curl) {
        gs_kube_close(k);
        return gs_error_set(err, GS_ENOMEM, "out of memory starting libcurl");
    }
    return 0;
}

void gs_kube_close(struct gs_kube *k)
{
    if (k->curl)
        curl_easy_cleanup(k->curl);
    if (k->token) /* credentials do not linger in freed memory */
        memset(k->token, 0, strlen(k->token));
    free(k->token);
    if (k->key.data)
        memset(k->key.data, 0, k->key.len);
    free(k->key.data);
    free(k->cert.data);
    free(k->ca.data);
    memset(k, 0, sizeof *k);
}

struct body {
    char *s;
    size_t n;
    int too_big;
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
    struct body *b = ud;
    size_t add = size * nmemb;
    if (b->n + add > MAX_BODY) {
        b->too_big = 1;
        return 0;
    }
    char *p = realloc(b->s, b->n + add + 1);
    if (!p)
        return 0;
    memcpy(p + b->n, ptr, add);
    b->n += add;
    p[b->n] = '\0';
    b->s = p;
    return add;
}

/* The handle set for one request to url: timeouts, TLS verification with the
 * kubeconfig's CA, the client certificate. */
static void set_connection(struct gs_kube *k, CURL *c, const char *url)
{
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(c, CURLOPT_USERAGENT, k->agent);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, k->insecure ? 0L : 1L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, k->insecure ? 0L : 2L);
    if (k->ca.data) {
        struct curl_blob blob = {k->ca.data, k->ca.len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
    }
    if (k->cert.data && k->key.data) {
        struct curl_blob cb = {k->cert.data, k->cert.len, CURL_BLOB_COPY};
        struct curl_blob kb = {k->key.data, k->key.len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cb);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

/* One request: GET; PATCH with a JSON merge patch; POST or PUT with a JSON
 * object; DELETE. *out: the answer's JSON (any 2xx status is success). */
static int request(struct gs_kube *k, const char *url, const char *method, const char *body,
                   cJSON **out, long *status, gs_error *err)
{
    const char *patch = body;
    CURL *c = k->curl;
    struct body b = {0};
    char auth[64 + 8192];
    struct curl_slist *hdr = curl_slist_append(NULL, "Accept: application/json");
    if (k->token && strlen(k->token) < 8192) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", k->token);
        struct curl_slist *h2 = hdr ? curl_slist_append(hdr, auth) : NULL;
        memset(auth, 0, sizeof auth);
        if (h2)
            hdr = h2;
    }
    if (patch && hdr) {
        struct curl_slist *h2 = curl_slist_append(
            hdr, strcmp(method, "PATCH") ? "Content-Type: application/json"
                                         : "Content-Type: application/merge-patch+json");
        if (h2)
            hdr = h2;
    }
    set_connection(k, c, url);
    if (strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, patch ? patch : "");
    } else {
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(hdr);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    int rc = 0;
    if (cc != CURLE_OK) {
        rc = gs_error_set(err, GS_EIO, "%s %s: %s%s", method, url,
                          b.too_big ? "answer larger than 64 MiB" : curl_easy_strerror(cc),
                          cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE
                              ? " (the server's certificate is not signed by the kubeconfig's "
                                "certificate-authority)"
                              : "");
    } else if (*status < 200 || *status > 299) {
        cJSON *st = b.s ? cJSON_Parse(b.s) : NULL;
        const char *msg = st ? gs_yamljson_str(st, "message") : NULL;
        rc = gs_error_set(err, *status == 401 || *status == 403 ? GS_EBUSY : GS_EIO,
                          "%s %s: HTTP %ld%s%s", method, url, *status, msg ? ": " : "",
                          msg ? msg : "");
        cJSON_Delete(st);
    } else {
        *out = b.s ? cJSON_ParseWithLength(b.s, b.n) : NULL;
        if (!*out)
            rc = gs_error_set(err, GS_EPROTO, "%s %s: the answer is not JSON", method, url);
    }
    free(b.s);
    return rc;
}

static int get_json(struct gs_kube *k, const char *url, cJSON **out, long *status, gs_error *err)
{
    return request(k, url, "GET", NULL, out, status, err);
}

char *gs_kube_escape(const char *s)
{
    char *e = curl_easy_escape(NULL, s, 0);
    char *out = e ? strdup(e) : NULL;
    curl_free(e);
    return out;
}

int gs_kube_get(struct gs_kube *k, const char *path, cJSON **out, long *status, gs_error *err)
{
    char *url = NULL;
    if (asprintf(&url, "%s%s", k->server, path) < 0)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    *out = NULL;
    int rc = get_json(k, url, out, status, err);
    free(url);
    return rc;
}

int gs_kube_patch(struct gs_kube *k, const char *path, const char *merge_patch, long *status,
                  gs_error *err)
{
    char *url = NULL;
    if (asprintf(&url, "%s%s", k->server, path) < 0)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    cJSON *out = NULL;
    int rc = request(k, url, "PATCH", merge_patch, &out, status, err);
    cJSON_Delete(out);
    free(url);
    return rc;
}

int gs_kube_send(struct gs_kube *k, const char *method, const char *path, const char *body,
                 cJSON **out, long *status, gs_error *err)
{
    char *url = NULL;
    if (asprintf(&url, "%s%s", k->server, path) < 0)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    cJSON *doc = NULL;
    int rc = request(k, url, method, body, &doc, status, err);
    if (out)
        *out = doc;
    else
        cJSON_Delete(doc);
    free(url);
    return rc;
}

int gs_kube_list(struct gs_kube *k, const char *path, cJSON **items, long *status, gs_error *err)
{
    *items = cJSON_CreateArray();
    if (!*items)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    char *cont = NULL;
    for (int page = 0; page < MAX_PAGES; page++) {
        char *url = NULL;
        char *esc = cont ? curl_easy_escape(k->curl, cont, 0) : NULL;
        if (asprintf(&url, "%s%s%slimit=500%s%s", k->server, path, strchr(path, '?') ? "&" : "?",
                     esc ? "&continue=" : "", esc ? esc : "") < 0)
            url = NULL;
        curl_free(esc);
        free(cont);
        cont = NULL;
        if (!url)
            return gs_error_set(err, GS_ENOMEM, "out of memory");
        cJSON *doc = NULL;
        int rc = get_json(k, url, &doc, status, err);
        free(url);
        if (rc < 0) {
            cJSON_Delete(*items);
            *items = NULL;
            return rc;
        }
        cJSON *its = cJSON_DetachItemFromObjectCaseSensitive(doc, "items");
        cJSON *it;
        while (its && (it = cJSON_DetachItemFromArray(its, 0)) != NULL)
            cJSON_AddItemToArray(*items, it);
        cJSON_Delete(its);
        const char *next =
            gs_yamljson_str(cJSON_GetObjectItemCaseSensitive(doc, "metadata"), "continue");
        if (next && *next)
            cont = strdup(next);
        cJSON_Delete(doc);
        if (!cont)
            return 0;
    }
    free(cont);
    return 0;
}

/* ---- exec: the pods/exec subresource over a WebSocket ----------------------
 *
 * The API server runs a command in a container when GET .../exec is upgraded
 * to a WebSocket with the subprotocol v4.channel.k8s.io (what kubectl speaks
 * since 1.30; the older SPDY upgrade is not offered here). Every binary
 * message then starts with a stream number: 1 stdout, 2 stderr, 3 the
 * command's end as a metav1.Status. We send nothing but pongs and the closing
 * frame (no stdin, no tty), so only the reading half of RFC 6455 is here.
 * Debian 12's libcurl is built without its WebSocket support (curl --version
 * lists no ws), so libcurl carries the TLS connection (CURLOPT_CONNECT_ONLY,
 * the same CA and client certificate as the GETs) and the framing is ours. */

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC11B85" /* RFC 6455, section 1.3 */
#define WS_PROTO "v4.channel.k8s.io"
#define WS_MAX_MESSAGE (16u << 20)
#define WS_IDLE_MS 120000 /* the doctor answers in seconds; a silent server for 2 min is gone */

struct ws {
    CURL *c;
    unsigned char buf[16384];
    size_t have, pos;
    gs_error *err;
};

static int ws_wait(struct ws *w, short events)
{
    curl_socket_t s = CURL_SOCKET_BAD;
    if (curl_easy_getinfo(w->c, CURLINFO_ACTIVESOCKET, &s) != CURLE_OK || s == CURL_SOCKET_BAD)
        return gs_error_set(w->err, GS_EIO, "exec: the connection to the API server is gone");
    struct pollfd p = {.fd = s, .events = events};
    int n = poll(&p, 1, WS_IDLE_MS);
    if (n == 0)
        return gs_error_set(w->err, GS_EIO, "exec: nothing from the API server for %d s",
                            WS_IDLE_MS / 1000);
    return n < 0 ? gs_error_set(w->err, GS_EIO, "exec: poll: %s", strerror(errno)) : 0;
}

static int ws_send(struct ws *w, const void *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        size_t n = 0;
        CURLcode cc = curl_easy_send(w->c, (const char *)data + off, len - off, &n);
        if (cc == CURLE_AGAIN) {
            if (ws_wait(w, POLLOUT) < 0)
                return GS_EIO;
            continue;
        }
        if (cc != CURLE_OK)
            return gs_error_set(w->err, GS_EIO, "exec: sending: %s", curl_easy_strerror(cc));
        off += n;
    }
    return 0;
}

/* Makes at least n bytes available at w->buf + w->pos (n <= sizeof buf).
 * Returns 1, 0 at a clean end of the connection, or a negative code. */
static int ws_need(struct ws *w, size_t n)
{
    if (w->have - w->pos >= n)
        return 1;
    memmove(w->buf, w->buf + w->pos, w->have - w->pos);
    w->have -= w->pos;
    w->pos = 0;
    while (w->have < n) {
        size_t got = 0;
        CURLcode cc = curl_easy_recv(w->c, w->buf + w->have, sizeof w->buf - w->have, &got);
        if (cc == CURLE_AGAIN) {
            if (ws_wait(w, POLLIN) < 0)
                return GS_EIO;
            continue;
        }
        if (cc != CURLE_OK)
            return gs_error_set(w->err, GS_EIO, "exec: receiving: %s", curl_easy_strerror(cc));
        if (got == 0)
            return 0;
        w->have += got;
    }
    return 1;
}

/* One frame from us: always masked (RFC 6455 5.3), control frames only. */
static int ws_control(struct ws *w, unsigned opcode, const unsigned char *payload, size_t len)
{
    unsigned char f[2 + 4 + 125];
    if (len > 125)
        len = 125;
    f[0] = (unsigned char)(0x80 | opcode);
    f[1] = (unsigned char)(0x80 | len);
    if (getrandom(f + 2, 4, 0) != 4)
        memset(f + 2, 0x5a, 4);
    for (size_t i = 0; i < len; i++)
        f[6 + i] = payload[i] ^ f[2 + i % 4];
    return ws_send(w, f, 6 + len);
}

/* Reads the 101 answer to the upgrade; checks the accept key and the
 * subprotocol. On another status, the API server's own message. */
static int ws_handshake(struct ws *w, const char *key)
{
    char *end = NULL;
    for (;;) {
        w->buf[w->have < sizeof w->buf ? w->have : sizeof w->buf - 1] = '\0';
        end = strstr((char *)w->buf, "\r\n\r\n");
        if (end)
            break;
        if (w->have >= sizeof w->buf - 1)
            return gs_error_set(w->err, GS_EPROTO,
                                "exec: the API server's answer has no end "
                                "of headers");
        int rc = ws_need(w, w->have + 1);
        if (rc <= 0)
            return rc < 0 ? rc
                          : gs_error_set(w->err, GS_EPROTO,
                                         "exec: the API server closed the connection before "
                                         "answering the upgrade");
    }
    *end = '\0';
    w->pos = (size_t)(end + 4 - (char *)w->buf);
    char *hdrs = (char *)w->buf;
    int code = 0;
    if (sscanf(hdrs, "HTTP/1.%*d %d", &code) != 1)
        return gs_error_set(w->err, GS_EPROTO, "exec: the answer is not HTTP: %.60s", hdrs);
    if (code != 101) {
        /* The body: a metav1.Status, read as far as Content-Length says (or the end). */
        const char *cl = strcasestr(hdrs, "\r\nContent-Length:");
        size_t want = cl ? strtoul(cl + 17, NULL, 10) : sizeof w->buf;
        if (want > sizeof w->buf - 1 - w->pos)
            want = sizeof w->buf - 1 - w->pos;
        while (w->have - w->pos < want && ws_need(w, w->have - w->pos + 1) > 0)
            ;
        cJSON *st = cJSON_ParseWithLength((char *)w->buf + w->pos, w->have - w->pos);
        const char *msg = st ? gs_yamljson_str(st, "message") : NULL;
        int rc = gs_error_set(w->err, code == 401 || code == 403 ? GS_EBUSY : GS_EIO,
                              "exec: HTTP %d%s%s", code, msg ? ": " : "", msg ? msg : "");
        cJSON_Delete(st);
        return rc;
    }
    unsigned char sha[20], want[64];
    char joined[128];
    snprintf(joined, sizeof joined, "%s%s", key, WS_GUID);
    SHA1((const unsigned char *)joined, strlen(joined), sha);
    EVP_EncodeBlock(want, sha, sizeof sha);
    int accepted = 0, proto = 0;
    for (char *line = strstr(hdrs, "\r\n"); line; line = strstr(line, "\r\n")) {
        line += 2;
        char *colon = strchr(line, ':');
        char *eol = strstr(line, "\r\n");
        if (!colon || (eol && colon > eol))
            continue;
        char *v = colon + 1;
        while (*v == ' ')
            v++;
        size_t vl = eol ? (size_t)(eol - v) : strlen(v);
        while (vl && v[vl - 1] == ' ')
            vl--;
        size_t nl = (size_t)(colon - line);
        if (nl == 20 && !strncasecmp(line, "Sec-WebSocket-Accept", nl))
            accepted = vl == strlen((char *)want) && !memcmp(v, want, vl);
        else if (nl == 22 && !strncasecmp(line, "Sec-WebSocket-Protocol", nl))
            proto = vl == strlen(WS_PROTO) && !memcmp(v, WS_PROTO, vl);
    }
    if (!accepted)
        return gs_error_set(w->err, GS_EPROTO,
                            "exec: the upgrade was answered without the right "
                            "Sec-WebSocket-Accept (a proxy in between?)");
    if (!proto)
        return gs_error_set(w->err, GS_ENOTSUP,
                            "exec: the API server did not accept the " WS_PROTO
                            " subprotocol (Kubernetes before 1.30 without WebSocket exec?); run "
                            "kubectl exec instead");
    return 0;
}

/* The command's end on stream 3: {"status":"Success"}, or a Failure whose
 * cause ExitCode carries the status. */
static int ws_status(const char *msg, size_t len, int *exit_code, gs_error *err)
{
    cJSON *st = cJSON_ParseWithLength(msg, len);
    const char *s = st ? gs_yamljson_str(st, "status") : NULL;
    int rc = 0;
    if (s && !strcmp(s, "Success")) {
        *exit_code = 0;
    } else {
        const char *reason = st ? gs_yamljson_str(st, "reason") : NULL;
        const cJSON *cause;
        int found = 0;
        cJSON_ArrayForEach(cause, cJSON_GetObjectItemCaseSensitive(
                                      cJSON_GetObjectItemCaseSensitive(st, "details"), "causes"))
        {
            const char *r = gs_yamljson_str(cause, "reason"),
                       *m = gs_yamljson_str(cause, "message");
            if (r && m && !strcmp(r, "ExitCode")) {
                *exit_code = atoi(m) & 0xff;
                found = 1;
            }
        }
        if (!found || !reason || strcmp(reason, "NonZeroExitCode") != 0) {
            const char *m = st ? gs_yamljson_str(st, "message") : NULL;
            rc = gs_error_set(err, GS_EIO, "exec failed: %s", m ? m : "(no message)");
        }
    }
    cJSON_Delete(st);
    return rc;
}

int gs_kube_exec(struct gs_kube *k, const char *path, gs_kube_sink sink, void *ud, int *exit_code,
                 gs_error *err)
{
    *exit_code = -1;
    struct ws *w = calloc(1, sizeof *w);
    if (!w)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    /* A handle of its own: a connection made with CONNECT_ONLY is never handed
     * to a later GET, and goes with the handle. */
    w->c = curl_easy_init();
    w->err = err;
    if (!w->c) {
        free(w);
        return gs_error_set(err, GS_ENOMEM, "out of memory starting libcurl");
    }
    set_connection(k, w->c, k->server);
    curl_easy_setopt(w->c, CURLOPT_CONNECT_ONLY, 1L);
    /* ALPN must not pick HTTP/2: the upgrade is an HTTP/1.1 request. */
    curl_easy_setopt(w->c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    CURLcode cc = curl_easy_perform(w->c);
    int rc = 0;
    if (cc != CURLE_OK)
        rc = gs_error_set(err, GS_EIO, "exec: connecting to %s: %s", k->server,
                          curl_easy_strerror(cc));
    unsigned char raw[16];
    char key[32], *req = NULL;
    if (rc == 0 && getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        rc = gs_error_set(err, GS_EIO, "exec: no random bytes for the WebSocket key");
    if (rc == 0) {
        EVP_EncodeBlock((unsigned char *)key, raw, sizeof raw);
        const char *host = strstr(k->server, "://");
        host = host ? host + 3 : k->server;
        int n = asprintf(&req,
                         "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
                         "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Protocol: " WS_PROTO "\r\n"
                         "%s%s%s\r\n",
                         path, host, k->agent, key, k->token ? "Authorization: Bearer " : "",
                         k->token ? k->token : "", k->token ? "\r\n" : "");
        if (n < 0) {
            req = NULL;
            rc = gs_error_set(err, GS_ENOMEM, "out of memory");
        } else {
            rc = ws_send(w, req, (size_t)n);
            memset(req, 0, (size_t)n); /* it holds the token */
        }
        free(req);
    }
    if (rc == 0)
        rc = ws_handshake(w, key);
    int channel = -1, done = 0;
    char *msg = NULL; /* stream 3's message, gathered across frames */
    size_t msglen = 0;
    while (rc == 0 && !done) {
        int got = ws_need(w, 2);
        if (got <= 0) {
            rc = got < 0 ? got : 0;
            break; /* the end of the connection ends the command's output */
        }
        unsigned char b0 = w->buf[w->pos], b1 = w->buf[w->pos + 1];
        unsigned opcode = b0 & 0x0f;
        size_t hl = (b1 & 0x7f) == 126 ? 4 : (b1 & 0x7f) == 127 ? 10 : 2;
        if (b1 & 0x80) {
            rc = gs_error_set(err, GS_EPROTO, "exec: the server sent a masked frame");
            break;
        }
        if ((got = ws_need(w, hl)) <= 0) {
            rc = got < 0 ? got : gs_error_set(err, GS_EPROTO, "exec: a frame cut short");
            break;
        }
        uint64_t len = b1 & 0x7f;
        const unsigned char *h = w->buf + w->pos;
        if (len == 126)
            len = (uint64_t)h[2] << 8 | h[3];
        else if (len == 127)
            for (int i = 0; i < 8; i++)
                len = (i ? len << 8 : 0) | h[2 + i];
        w->pos += hl;
        if (len > WS_MAX_MESSAGE) {
            rc = gs_error_set(err, GS_ERANGE, "exec: a frame of %llu bytes, above %u MiB",
                              (unsigned long long)len, WS_MAX_MESSAGE >> 20);
            break;
        }
        if (opcode >= 8 && len > 125) {
            rc = gs_error_set(err, GS_EPROTO, "exec: a control frame longer than 125 bytes");
            break;
        }
        /* The payload, in pieces of at most the buffer's size. */
        int first = 1;
        unsigned char ctl[125];
        size_t ctl_len = 0;
        while (rc == 0 && (len > 0 || first)) {
            size_t piece = len < sizeof w->buf / 2 ? (size_t)len : sizeof w->buf / 2;
            if (piece && (got = ws_need(w, piece)) <= 0) {
                rc = got < 0 ? got : gs_error_set(err, GS_EPROTO, "exec: a frame cut short");
                break;
            }
            const unsigned char *p = w->buf + w->pos;
            size_t n = piece;
            w->pos += piece;
            len -= piece;
            if (opcode >= 8) {
                memcpy(ctl + ctl_len, p, n);
                ctl_len += n;
            } else {
                if (first && opcode != 0) { /* a new message: its first byte is the stream */
                    if (n == 0) {
                        first = 0;
                        break;
                    }
                    channel = p[0];
                    p++;
                    n--;
                }
                if (channel == 3 && n) {
                    char *m = msglen + n <= WS_MAX_MESSAGE ? realloc(msg, msglen + n + 1) : NULL;
                    if (!m) {
                        rc = gs_error_set(err, GS_ENOMEM, "exec: the status is too large");
                        break;
                    }
                    memcpy(m + msglen, p, n);
                    msg = m;
                    msglen += n;
                } else if ((channel == 1 || channel == 2) && n &&
                           sink(channel, (const char *)p, n, ud) < 0) {
                    rc = gs_error_set(err, GS_EIO, "exec: cannot write the command's output");
                }
            }
            first = 0;
        }
        if (rc < 0)
            break;
        if (opcode == 0x9) { /* ping: answer with the same bytes */
            rc = ws_control(w, 0xA, ctl, ctl_len);
        } else if (opcode == 0x8) { /* close: echo it, and the command is over */
            rc = ws_control(w, 0x8, ctl, ctl_len >= 2 ? 2 : 0);
            done = 1;
        } else if (opcode != 0xA && opcode != 0x0 && opcode != 0x1 && opcode != 0x2) {
            rc = gs_error_set(err, GS_EPROTO, "exec: unknown frame opcode %u", opcode);
        }
    }
    if (rc == 0 && msg)
        rc = ws_status(msg, msglen, exit_code, err);
    else if (rc == 0)
        rc = gs_error_set(err, GS_EPROTO,
                          "exec: the connection ended before the command's exit status came");
    free(msg);
    curl_easy_cleanup(w->c);
    free(w);
    return rc;
}
