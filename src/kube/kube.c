/* The API client of the doctor and the kubectl plugin (kube.h). TLS goes through libcurl with the
 * CA and client certificate handed over as in-memory blobs (CURLOPT_*_BLOB, curl 7.77+), so no
 * secret is ever written to a temporary file. */
#define _GNU_SOURCE /* asprintf */
#include "kube/kube.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

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
        rooted(root, "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", ca, sizeof ca) ||
        stat(tok, &st) != 0)
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

static int get_json(struct gs_kube *k, const char *url, cJSON **out, long *status, gs_error *err)
{
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
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
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
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(hdr);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    int rc = 0;
    if (cc != CURLE_OK) {
        rc = gs_error_set(err, GS_EIO, "GET %s: %s%s", url,
                          b.too_big ? "answer larger than 64 MiB" : curl_easy_strerror(cc),
                          cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE
                              ? " (the server's certificate is not signed by the kubeconfig's "
                                "certificate-authority)"
                              : "");
    } else if (*status != 200) {
        cJSON *st = b.s ? cJSON_Parse(b.s) : NULL;
        const char *msg = st ? gs_yamljson_str(st, "message") : NULL;
        rc = gs_error_set(err, *status == 401 || *status == 403 ? GS_EBUSY : GS_EIO,
                          "GET %s: HTTP %ld%s%s", url, *status, msg ? ": " : "", msg ? msg : "");
        cJSON_Delete(st);
    } else {
        *out = b.s ? cJSON_ParseWithLength(b.s, b.n) : NULL;
        if (!*out)
            rc = gs_error_set(err, GS_EPROTO, "GET %s: the answer is not JSON", url);
    }
    free(b.s);
    return rc;
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
