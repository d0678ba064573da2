/* The doctor's TOML reader (toml.h says what it takes). A recursive-descent
 * parser over a bounded cursor: every read checks the end, every recursion
 * and key path is bounded by GS_TOML_MAX_DEPTH. */
#include "doctor/toml.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct cur {
    const char *p, *end, *line_start;
    int line;
    const char *origin;
    gs_error *err;
    struct gs_toml *t;
    char *table[GS_TOML_MAX_DEPTH]; /* current [table] path (owned copies) */
    size_t table_depth;
};

static int fail(struct cur *c, const char *what)
{
    return gs_error_set(c->err, GS_EINVAL, "%s:%d:%d: %s", c->origin, c->line,
                        (int)(c->p - c->line_start) + 1, what);
}

static int at_end(const struct cur *c)
{
    return c->p >= c->end;
}
static int peek(const struct cur *c)
{
    return at_end(c) ? -1 : (unsigned char)*c->p;
}
static int peek_at(const struct cur *c, size_t off)
{
    return (size_t)(c->end - c->p) > off ? (unsigned char)c->p[off] : -1;
}

static void newline(struct cur *c)
{
    c->line++;
    c->line_start = c->p;
}

static void skip_ws(struct cur *c)
{
    while (peek(c) == ' ' || peek(c) == '\t')
        c->p++;
}

static void skip_comment(struct cur *c)
{
    if (peek(c) == '#')
        while (!at_end(c) && *c->p != '\n')
            c->p++;
}

/* Whitespace, comments and newlines (inside arrays). */
static void skip_ws_nl(struct cur *c)
{
    for (;;) {
        skip_ws(c);
        skip_comment(c);
        if (peek(c) == '\r' && peek_at(c, 1) == '\n')
            c->p++;
        if (peek(c) != '\n')
            return;
        c->p++;
        newline(c);
    }
}

/* After a value or header: only whitespace, a comment, then a newline or the end. */
static int end_of_line(struct cur *c)
{
    skip_ws(c);
    skip_comment(c);
    if (peek(c) == '\r' && peek_at(c, 1) == '\n')
        c->p++;
    if (at_end(c))
        return 0;
    if (*c->p != '\n')
        return fail(c, "unexpected text after the value (one key = value per line)");
    c->p++;
    newline(c);
    return 0;
}

/* --- a growing byte buffer for decoded strings --- */
struct buf {
    char *s;
    size_t n, cap;
};

static int buf_put(struct buf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p)
            return -1;
        b->s = p;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
    return 0;
}

static int put_utf8(struct buf *b, unsigned long cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return buf_put(b, u, n);
}

static int oom(struct cur *c)
{
    return gs_error_set(c->err, GS_ENOMEM, "%s: out of memory parsing TOML", c->origin);
}

/* Parses one string of any kind at the cursor into *out (malloc'd). */
static int parse_string(struct cur *c, char **out)
{
    struct buf b = {0};
    int q = peek(c);
    int multi = peek_at(c, 1) == q && peek_at(c, 2) == q;
    int literal = q == '\'';
    c->p += multi ? 3 : 1;
    if (multi) { /* a newline right after the opening quotes is dropped */
        if (peek(c) == '\r' && peek_at(c, 1) == '\n')
            c->p++;
        if (peek(c) == '\n') {
            c->p++;
            newline(c);
        }
    }
    int rc = 0;
    if (buf_put(&b, "", 0) < 0)
        return oom(c);
    for (;;) {
        if (at_end(c)) {
            rc = fail(c, "string is not closed");
            break;
        }
        char ch = *c->p;
        if (ch == q && (!multi || (peek_at(c, 1) == q && peek_at(c, 2) == q))) {
            c->p += multi ? 3 : 1;
            /* up to two more quotes right before the closing three belong to the string */
            for (int extra = 0; multi && extra < 2 && peek(c) == q; extra++) {
                if (buf_put(&b, &ch, 1) < 0) {
                    rc = oom(c);
                    break;
                }
                c->p++;
            }
            break;
        }
        if (ch == '\n') {
            if (!multi) {
                rc = fail(c, "string runs past the end of the line");
                break;
            }
            c->p++;
            newline(c);
            if (buf_put(&b, "\n", 1) < 0) {
                rc = oom(c);
                break;
            }
            continue;
        }
        if (ch == '\\' && !literal) {
            int e = peek_at(c, 1);
            const char *rep = NULL;
            switch (e) {
            case 'b': rep = "\b"; break;
            case 't': rep = "\t"; break;
            case 'n': rep = "\n"; break;
            case 'f': rep = "\f"; break;
            case 'r': rep = "\r"; break;
            case 'e': rep = "\x1b"; break;
            case '"': rep = "\""; break;
            case '\\': rep = "\\"; break;
            default: break;
            }
            if (rep) {
                c->p += 2;
                if (buf_put(&b, rep, 1) < 0) {
                    rc = oom(c);
                    break;
                }
                continue;
            }
            if (e == 'u' || e == 'U') {
                size_t nd = e == 'u' ? 4 : 8;
                unsigned long cp = 0;
                for (size_t i = 0; i < nd; i++) {
                    int h = peek_at(c, 2 + i);
                    int v = h >= '0' && h <= '9'   ? h - '0'
                            : h >= 'a' && h <= 'f' ? h - 'a' + 10
                            : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                                   : -1;
                    if (v < 0) {
                        cp = ~0ul;
                        break;
                    }
                    cp = cp * 16 + (unsigned long)v;
                }
                if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
                    rc = fail(c, "bad \\u escape (4 or 8 hex digits of a Unicode scalar)");
                    break;
                }
                c->p += 2 + nd;
                if (put_utf8(&b, cp) < 0) {
                    rc = oom(c);
                    break;
                }
                continue;
            }
            if (multi && (e == ' ' || e == '\t' || e == '\n' || e == '\r')) {
                /* line-ending backslash: drop it and all whitespace up to the next text */
                const char *save = c->p++;
                skip_ws(c);
                if (peek(c) == '\r')
                    c->p++;
                if (peek(c) != '\n') {
                    c->p = save;
                    rc = fail(c, "backslash in a multi-line string must end the line");
                    break;
                }
                while (peek(c) == ' ' || peek(c) == '\t' || peek(c) == '\n' || peek(c) == '\r') {
                    if (*c->p++ == '\n')
                        newline(c);
                }
                continue;
            }
            rc = fail(c, "unknown escape in a string (use \\\\ for a backslash)");
            break;
        }
        if (ch == '\0') {
            rc = fail(c, "NUL byte in a string");
            break;
        }
        if (buf_put(&b, &ch, 1) < 0) {
            rc = oom(c);
            break;
        }
        c->p++;
    }
    if (rc < 0) {
        free(b.s);
        return rc;
    }
    *out = b.s;
    return 0;
}

static int is_bare(int ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-';
}

static void free_key(char **key, size_t depth)
{
    for (size_t i = 0; i < depth; i++)
        free(key[i]);
}

/* Parses a dotted key into key[] (owned); *depth segments. */
static int parse_key(struct cur *c, char **key, size_t *depth)
{
    *depth = 0;
    for (;;) {
        skip_ws(c);
        if (*depth >= GS_TOML_MAX_DEPTH) {
            free_key(key, *depth);
            return fail(c, "key has too many dotted parts");
        }
        char *seg = NULL;
        int ch = peek(c);
        if (ch == '"' || ch == '\'') {
            if (peek_at(c, 1) == ch && peek_at(c, 2) == ch) {
                free_key(key, *depth);
                return fail(c, "a key cannot be a multi-line string");
            }
            int rc = parse_string(c, &seg);
            if (rc < 0) {
                free_key(key, *depth);
                return rc;
            }
        } else if (is_bare(ch)) {
            const char *s = c->p;
            while (is_bare(peek(c)))
                c->p++;
            seg = strndup(s, (size_t)(c->p - s));
            if (!seg) {
                free_key(key, *depth);
                return oom(c);
            }
        } else {
            free_key(key, *depth);
            return fail(c, "expected a key (bare, \"quoted\" or 'literal')");
        }
        key[(*depth)++] = seg;
        skip_ws(c);
        if (peek(c) != '.')
            return 0;
        c->p++;
    }
}

static struct gs_toml_entry *add_entry(struct cur *c, char *const *prefix, size_t np,
                                       char *const *key, size_t nk, enum gs_toml_type type)
{
    struct gs_toml *t = c->t;
    if (t->n >= GS_TOML_MAX_ENTRIES) {
        fail(c, "too many keys (more than 65536)");
        return NULL;
    }
    if (np + nk > GS_TOML_MAX_DEPTH) {
        fail(c, "key path is too deep");
        return NULL;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        struct gs_toml_entry *p = realloc(t->e, cap * sizeof *p);
        if (!p) {
            oom(c);
            return NULL;
        }
        t->e = p;
        t->cap = cap;
    }
    struct gs_toml_entry *e = &t->e[t->n];
    memset(e, 0, sizeof *e);
    e->key = calloc(np + nk ? np + nk : 1, sizeof *e->key);
    if (!e->key) {
        oom(c);
        return NULL;
    }
    for (size_t i = 0; i < np + nk; i++) {
        e->key[i] = strdup(i < np ? prefix[i] : key[i - np]);
        if (!e->key[i]) {
            free_key(e->key, i);
            free(e->key);
            oom(c);
            return NULL;
        }
    }
    e->depth = np + nk;
    e->type = type;
    e->line = c->line;
    t->n++;
    return e;
}

/* A key, then '=' (whitespace around both); on error nothing is left owned. */
static int parse_key_eq(struct cur *c, char **key, size_t *nk, const char *where)
{
    int rc = parse_key(c, key, nk);
    if (rc < 0)
        return rc;
    skip_ws(c);
    if (peek(c) != '=') {
        free_key(key, *nk);
        return fail(c, where);
    }
    c->p++;
    skip_ws(c);
    return 0;
}

static int parse_value(struct cur *c, long idx, char **path, size_t np, int level);

/* { a = 1, b.c = "x" }: with path set, each key becomes an entry under path;
 * without (an inline table inside an array), the values are checked and dropped. */
static int parse_inline_table(struct cur *c, char **path, size_t np, int keep, int level)
{
    c->p++; /* { */
    skip_ws(c);
    if (peek(c) == '}') {
        c->p++;
        return 0;
    }
    for (;;) {
        char *key[GS_TOML_MAX_DEPTH];
        size_t nk;
        int rc = parse_key_eq(c, key, &nk, "expected '=' after the key in an inline table");
        if (rc < 0)
            return rc;
        if (np + nk > GS_TOML_MAX_DEPTH) {
            free_key(key, nk);
            return fail(c, "key path is too deep");
        }
        char *full[GS_TOML_MAX_DEPTH];
        for (size_t i = 0; i < np; i++)
            full[i] = path[i];
        for (size_t i = 0; i < nk; i++)
            full[np + i] = key[i];
        long idx = -1;
        if (keep) {
            if (!add_entry(c, path, np, key, nk, GS_TOML_OTHER)) {
                free_key(key, nk);
                return c->err->code;
            }
            idx = (long)c->t->n - 1;
        }
        rc = parse_value(c, idx, full, np + nk, level + 1);
        free_key(key, nk);
        if (rc < 0)
            return rc;
        skip_ws(c);
        if (peek(c) == ',') {
            c->p++;
            skip_ws(c);
            continue;
        }
        if (peek(c) == '}') {
            c->p++;
            return 0;
        }
        return fail(c, "expected ',' or '}' in an inline table");
    }
}

/* A run of characters that can make up a number, date or time. */
static size_t scalar_run(const struct cur *c)
{
    size_t n = 0;
    for (;;) {
        int ch = peek_at(c, n);
        if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            ch == '_' || ch == '+' || ch == '-' || ch == '.' || ch == ':') {
            n++;
            continue;
        }
        /* "1979-05-27 07:32:00": a date, one space, a time */
        if (ch == ' ' && n == 10 && peek_at(c, 4) == '-' && peek_at(c, 7) == '-' &&
            peek_at(c, n + 1) >= '0' && peek_at(c, n + 1) <= '9') {
            n++;
            continue;
        }
        return n;
    }
}

/* Strict integer: decimal with '_' between digits, or 0x/0o/0b. */
static int parse_int(const char *s, size_t n, long long *out)
{
    char tmp[80];
    size_t o = 0;
    int base = 10;
    size_t i = 0;
    int neg = 0;
    if (n == 0 || n >= sizeof tmp)
        return -1;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'o' || s[i + 1] == 'b')) {
        if (i)
            return -1; /* no sign on prefixed integers */
        base = s[i + 1] == 'x' ? 16 : s[i + 1] == 'o' ? 8 : 2;
        i += 2;
    } else if (n - i > 1 && s[i] == '0') {
        return -1; /* no leading zeros */
    }
    if (i >= n)
        return -1;
    for (; i < n; i++) {
        char ch = s[i];
        if (ch == '_') {
            if (o == 0 || i + 1 >= n || s[i + 1] == '_')
                return -1;
            continue;
        }
        int v = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : 99;
        if (v >= base)
            return -1;
        tmp[o++] = ch;
    }
    tmp[o] = '\0';
    errno = 0;
    char *end;
    unsigned long long v = strtoull(tmp, &end, base);
    if (errno || *end || v > (unsigned long long)LLONG_MAX + (unsigned long long)neg)
        return -1;
    *out = neg ? (long long)(0 - v) : (long long)v;
    return 0;
}

/* Floats, dates and times: checked loosely (a digit first, or inf/nan). */
static int looks_other(const char *s, size_t n)
{
    size_t i = (n && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
    if (n - i == 3 && (!strncmp(s + i, "inf", 3) || !strncmp(s + i, "nan", 3)))
        return 1;
    if (i >= n || s[i] < '0' || s[i] > '9')
        return 0;
    /* a float has '.', 'e' or 'E'; a date '-', a time ':' (integers were tried first) */
    for (size_t k = i; k < n; k++)
        if (strchr(".eE-:", s[k]))
            return 1;
    return 0;
}

/* Parses a value into entry idx of the document (idx < 0: check it and drop
 * it, e.g. a nested array's element). Entries are addressed by index because
 * an inline table adds entries and may move the array. */
static int parse_value(struct cur *c, long idx, char **path, size_t np, int level)
{
    if (level >= GS_TOML_MAX_DEPTH)
        return fail(c, "values nested too deeply");
#define E (&c->t->e[idx])
    int ch = peek(c);
    if (ch == '{') {
        if (idx >= 0)
            E->type = GS_TOML_TABLE;
        return parse_inline_table(c, path, np, idx >= 0, level);
    }
    if (ch == '"' || ch == '\'') {
        char *s;
        int rc = parse_string(c, &s);
        if (rc < 0)
            return rc;
        if (idx >= 0) {
            E->type = GS_TOML_STRING;
            E->str = s;
        } else {
            free(s);
        }
        return 0;
    }
    if (ch == '[') {
        c->p++;
        if (idx >= 0)
            E->type = GS_TOML_ARRAY;
        for (;;) {
            skip_ws_nl(c);
            if (peek(c) == ']') {
                c->p++;
                return 0;
            }
            int el = peek(c);
            if (idx >= 0 && (el == '"' || el == '\'')) {
                char *s;
                int rc = parse_string(c, &s);
                if (rc < 0)
                    return rc;
                char **items = realloc(E->items, (E->nitems + 1) * sizeof *items);
                if (!items) {
                    free(s);
                    return oom(c);
                }
                E->items = items;
                E->items[E->nitems++] = s;
            } else {
                int rc = parse_value(c, -1, NULL, 0, level + 1);
                if (rc < 0)
                    return rc;
                if (idx >= 0)
                    E->nitems_other++;
            }
            skip_ws_nl(c);
            if (peek(c) == ',') {
                c->p++;
                continue;
            }
            if (peek(c) == ']') {
                c->p++;
                return 0;
            }
            return fail(c, "expected ',' or ']' in an array");
        }
    }
    size_t n = scalar_run(c);
    if (n == 0)
        return fail(c, "expected a value: a \"string\", true/false, a number or [an array]");
    long long iv;
    if ((n == 4 && !strncmp(c->p, "true", 4)) || (n == 5 && !strncmp(c->p, "false", 5))) {
        if (idx >= 0) {
            E->type = GS_TOML_BOOL;
            E->boolean = n == 4;
        }
    } else if (parse_int(c->p, n, &iv) == 0) {
        if (idx >= 0) {
            E->type = GS_TOML_INT;
            E->integer = iv;
        }
    } else if (!looks_other(c->p, n)) {
        return fail(c, "unknown value (strings need quotes: \"...\")");
    }
#undef E
    c->p += n;
    return 0;
}

static int parse_header(struct cur *c)
{
    int array = peek_at(c, 1) == '[';
    c->p += array ? 2 : 1;
    char *key[GS_TOML_MAX_DEPTH];
    size_t nk;
    int rc = parse_key(c, key, &nk);
    if (rc < 0)
        return rc;
    skip_ws(c);
    if (peek(c) != ']' || (array && peek_at(c, 1) != ']')) {
        free_key(key, nk);
        return fail(c, array ? "expected ']]' to close the array table header"
                             : "expected ']' to close the table header");
    }
    c->p += array ? 2 : 1;
    if (!add_entry(c, NULL, 0, key, nk, GS_TOML_TABLE)) {
        free_key(key, nk);
        return c->err->code;
    }
    free_key(c->table, c->table_depth);
    for (size_t i = 0; i < nk; i++)
        c->table[i] = key[i];
    c->table_depth = nk;
    return end_of_line(c);
}

static int parse_keyval(struct cur *c)
{
    char *key[GS_TOML_MAX_DEPTH];
    size_t nk;
    int rc = parse_key_eq(c, key, &nk, "expected '=' after the key");
    if (rc < 0)
        return rc;
    if (!add_entry(c, c->table, c->table_depth, key, nk, GS_TOML_OTHER)) {
        free_key(key, nk);
        return c->err->code;
    }
    char *full[GS_TOML_MAX_DEPTH];
    size_t nf = 0;
    for (size_t i = 0; i < c->table_depth; i++)
        full[nf++] = c->table[i];
    for (size_t i = 0; i < nk; i++)
        full[nf++] = key[i];
    rc = parse_value(c, (long)c->t->n - 1, full, nf, 0);
    free_key(key, nk);
    if (rc < 0)
        return rc;
    return end_of_line(c);
}

/* Blanks {{ ... }} (Go template actions) with spaces, keeping newlines. */
static void blank_templates(char *s, size_t len, int *has_base)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] != '{' || s[i + 1] != '{')
            continue;
        size_t j = i + 2;
        while (j + 1 < len && !(s[j] == '}' && s[j + 1] == '}'))
            j++;
        size_t stop = j + 1 < len ? j + 2 : len;
        if (has_base) {
            const char *base = "template \"base\"";
            size_t bl = strlen(base);
            for (size_t k = i; k + bl <= stop; k++)
                if (!memcmp(s + k, base, bl))
                    *has_base = 1;
        }
        for (size_t k = i; k < stop; k++)
            if (s[k] != '\n')
                s[k] = ' ';
        i = stop - 1;
    }
}

int gs_toml_parse(const char *text, size_t len, const char *origin, const struct gs_toml_opts *opts,
                  struct gs_toml **out, gs_error *err)
{
    *out = NULL;
    if (!origin)
        origin = "(toml)";
    if (memchr(text, '\0', len))
        return gs_error_set(err, GS_EINVAL, "%s: contains a NUL byte: not a text file", origin);
    char *copy = NULL;
    if (opts && opts->templates) {
        copy = malloc(len + 1);
        if (!copy)
            return gs_error_set(err, GS_ENOMEM, "%s: out of memory parsing TOML", origin);
        memcpy(copy, text, len);
        copy[len] = '\0';
        if (opts->has_base)
            *opts->has_base = 0;
        blank_templates(copy, len, opts->has_base);
        text = copy;
    }
    struct gs_toml *t = calloc(1, sizeof *t);
    if (!t) {
        free(copy);
        return gs_error_set(err, GS_ENOMEM, "%s: out of memory parsing TOML", origin);
    }
    gs_error local;
    struct cur c = {.p = text,
                    .end = text + len,
                    .line_start = text,
                    .line = 1,
                    .origin = origin,
                    .err = err ? err : &local,
                    .t = t};
    int rc = 0;
    /* a UTF-8 byte order mark is allowed at the start */
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3))
        c.p += 3;
    while (rc == 0) {
        skip_ws_nl(&c);
        if (at_end(&c))
            break;
        if (*c.p == '[')
            rc = parse_header(&c);
        else
            rc = parse_keyval(&c);
    }
    free_key(c.table, c.table_depth);
    free(copy);
    if (rc < 0) {
        gs_toml_free(t);
        return rc;
    }
    *out = t;
    return 0;
}

void gs_toml_free(struct gs_toml *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        struct gs_toml_entry *e = &t->e[i];
        free_key(e->key, e->depth);
        free(e->key);
        free(e->str);
        for (size_t k = 0; k < e->nitems; k++)
            free(e->items[k]);
        free(e->items);
    }
    free(t->e);
    free(t);
}

int gs_toml_has_prefix(const struct gs_toml_entry *e, const char *const *path, size_t depth)
{
    if (e->depth < depth)
        return 0;
    for (size_t i = 0; i < depth; i++)
        if (strcmp(path[i], "*") != 0 && strcmp(path[i], e->key[i]) != 0)
            return 0;
    return 1;
}

const struct gs_toml_entry *gs_toml_get(const struct gs_toml *t, const char *const *path,
                                        size_t depth)
{
    for (size_t i = t ? t->n : 0; i-- > 0;)
        if (t->e[i].depth == depth && gs_toml_has_prefix(&t->e[i], path, depth))
            return &t->e[i];
    return NULL;
}

const char *gs_toml_get_str(const struct gs_toml *t, const char *const *path, size_t depth)
{
    const struct gs_toml_entry *e = gs_toml_get(t, path, depth);
    return e && e->type == GS_TOML_STRING ? e->str : NULL;
}
