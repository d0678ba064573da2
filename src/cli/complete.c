/* Shell completion from one source: each verb's --help. The bash and zsh
 * scripts (completions/) only ask the binary, `gpuslice __complete WORD...`
 * (the words typed so far, the last one the word being completed), which runs
 * the verb's --help in a child and offers what the text names: the verbs, a
 * verb's --options, the commands of a verb that has them (kubectl), and the
 * agent's settings as --options. A flag added to a verb's help is completed
 * with nothing else to change, and the two can never disagree.
 *
 * kubectl (1.26 and later) completes a plugin's arguments by running
 * kubectl_complete-<plugin> WORD... (the plugin's words, the last being
 * completed); the same answer then ends with cobra's ":<directive>" line: 4 (no
 * file names) after candidates, 0 (the shell's default, file names) without. */
#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

#define MAX_HELP (256u << 10)

/* The verb's --help text, from a child that runs it with stdout on a pipe. */
static char *help_text(int (*fn)(int, char **), const char *verb)
{
    int fd[2];
    if (pipe(fd) != 0)
        return NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return NULL;
    }
    if (pid == 0) {
        close(fd[0]);
        if (dup2(fd[1], 1) < 0)
            _exit(1);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        char name[64], opt[] = "--help";
        snprintf(name, sizeof name, "%s", verb);
        char *args[] = {name, opt, NULL};
        fn(2, args);
        fflush(stdout);
        _exit(0);
    }
    close(fd[1]);
    char *buf = malloc(MAX_HELP + 1);
    size_t n = 0;
    ssize_t r;
    while (buf && n < MAX_HELP && (r = read(fd[0], buf + n, MAX_HELP - n)) > 0)
        n += (size_t)r;
    close(fd[0]);
    waitpid(pid, NULL, 0);
    if (buf)
        buf[n] = '\0';
    return buf;
}

struct cands {
    char **v;
    size_t n;
};

static void add(struct cands *c, const char *s, size_t len)
{
    for (size_t i = 0; i < c->n; i++)
        if (strlen(c->v[i]) == len && !strncmp(c->v[i], s, len))
            return;
    char **v = realloc(c->v, (c->n + 1) * sizeof *v);
    if (!v)
        return;
    c->v = v;
    c->v[c->n] = strndup(s, len);
    if (c->v[c->n])
        c->n++;
}

/* Every --option the text names. */
static void options(struct cands *c, const char *text)
{
    for (const char *p = text; (p = strstr(p, "--")) != NULL; p += 2) {
        if (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-'))
            continue;
        size_t l = 2;
        while (islower((unsigned char)p[l]) || isdigit((unsigned char)p[l]) || p[l] == '-')
            l++;
        if (l > 2 && islower((unsigned char)p[2]) && p[l - 1] != '-')
            add(c, p, l);
    }
}

/* The agent's settings table ("  name   meaning"): each is also --name-with-dashes. */
static void settings(struct cands *c, const char *text)
{
    for (const char *line = text; line && *line;
         line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "  ", 2) != 0 || !islower((unsigned char)line[2]))
            continue;
        size_t l = 2;
        while (islower((unsigned char)line[l]) || isdigit((unsigned char)line[l]) || line[l] == '_')
            l++;
        /* The name is padded to a column; the longest names leave one space. */
        if (line[l] != ' ' || (line[l + 1] != ' ' && !memchr(line + 2, '_', l - 2)))
            continue;
        char opt[80];
        int n = snprintf(opt, sizeof opt, "--%.*s", (int)(l - 2), line + 2);
        for (int i = 2; i < n; i++)
            if (opt[i] == '_')
                opt[i] = '-';
        if (n > 2 && (size_t)n < sizeof opt)
            add(c, opt, (size_t)n);
    }
}

/* The commands a verb lists under "commands:" (the kubectl plugin's). */
static void commands(struct cands *c, const char *text)
{
    const char *p = strstr(text, "\ncommands:\n");
    if (!p)
        return;
    for (p += 11; *p && *p != '\n'; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        if (strncmp(p, "  ", 2) != 0 || !islower((unsigned char)p[2]))
            continue;
        size_t l = 2;
        while (islower((unsigned char)p[l]) || p[l] == '-')
            l++;
        add(c, p + 2, l - 2);
    }
}

int gs_cli_complete(const struct gs_cli_verb *verbs, size_t nverbs, const char *fixed_verb,
                    int cobra, int argc, char **argv)
{
    /* argv: the words after the program's name; the last is being completed. */
    const char *cur = argc > 0 ? argv[argc - 1] : "";
    int nprior = argc > 0 ? argc - 1 : 0;
    struct cands c = {0};
    const char *verb = fixed_verb;
    int at = 0; /* index of the first word after the verb */
    int dashdash = 0, sub = 0;
    if (!verb)
        for (; at < nprior; at++)
            if (argv[at][0] != '-') {
                verb = argv[at++];
                break;
            }
    for (int i = at; i < nprior; i++) {
        if (!strcmp(argv[i], "--"))
            dashdash = 1;
        else if (argv[i][0] != '-' && !dashdash)
            sub = 1;
    }
    if (!verb || !strcmp(verb, "help")) {
        for (size_t i = 0; i < nverbs; i++)
            if (verbs[i].fn && (!verb || strcmp(verbs[i].name, "help")))
                add(&c, verbs[i].name, strlen(verbs[i].name));
        if (!verb) {
            add(&c, "--help", 6);
            add(&c, "--version", 9);
        }
    } else if (!dashdash) {
        int (*fn)(int, char **) = NULL;
        for (size_t i = 0; i < nverbs; i++)
            if (!strcmp(verbs[i].name, verb))
                fn = verbs[i].fn;
        char *text = fn ? help_text(fn, verb) : NULL;
        if (text) {
            if (!sub)
                commands(&c, text);
            options(&c, text);
            if (!strcmp(verb, "agent"))
                settings(&c, text);
        }
        free(text);
    }
    int shown = 0;
    for (size_t i = 0; i < c.n; i++) {
        if (!strncmp(c.v[i], cur, strlen(cur))) {
            printf("%s\n", c.v[i]);
            shown++;
        }
        free(c.v[i]);
    }
    free(c.v);
    if (cobra)
        printf(":%d\n", shown ? 4 : 0);
    return 0;
}
