#include "cli/cli.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/goal.h"
#include "util/path.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

static void wrap(FILE *f, int col, int indent, const char *text);

/* "goald: " and the message on stderr, wrapped at 80 columns on spaces,
 * continuation lines indented under the message (a word longer than a
 * line stays whole). */
static void say(const char *prefix, const char *fmt, va_list ap)
{
    char buf[8192];

    vsnprintf(buf, sizeof(buf), fmt, ap);
    fputs(prefix, stderr);
    wrap(stderr, (int)strlen(prefix), 7, buf);
}

int cli_fail(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say("goald: ", fmt, ap);
    va_end(ap);
    return code;
}

void cli_warn(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    say("goald: warning: ", fmt, ap);
    va_end(ap);
}

int cli_fail_err(int rc)
{
    int code = EXIT_FAIL;

    if (rc == ERR_INVALID || rc == ERR_NOTFOUND || rc == ERR_AMBIGUOUS)
        code = EXIT_USAGE;
    return cli_fail(code, "%s", err_last()[0] ? err_last() : err_name(rc));
}

int cli_flag(const struct cli_ctx *c, const char *name)
{
    return cli_opt(c, name) != NULL;
}

const char *cli_opt(const struct cli_ctx *c, const char *name)
{
    const struct cli_opt *o = c->cmd->opts;

    for (int i = 0; o && o[i].name; i++)
        if (!strcmp(o[i].name, name))
            return c->val[i];
    return NULL;
}

int cli_store(struct cli_ctx *c, store **out)
{
    char path[4096];
    int rc;

    if (c->st) {
        *out = c->st;
        return 0;
    }
    if (c->db_path)
        rc = path_fmt(path, sizeof(path), "%s", c->db_path);
    else
        rc = store_default_path(path, sizeof(path));
    if (rc != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    if (c->cmd && c->cmd->readonly)
        rc = store_open_existing(&c->st, path);
    else
        rc = store_open(&c->st, path);
    if (rc != 0)
        return cli_fail(EXIT_FAIL, "%s", err_last());
    if (store_created(c->st))
        cli_fail(0, "created a new database at %s", store_path(c->st));
    *out = c->st;
    return 0;
}

int cli_resolve(struct cli_ctx *c, enum store_kind kind, const char *prefix, char out[ID_SIZE])
{
    store *st;
    int rc = cli_store(c, &st);

    if (rc)
        return rc;
    if ((rc = store_resolve_id(st, kind, prefix, out)) != 0)
        return cli_fail(EXIT_USAGE, "%s", err_last());
    return 0;
}

int cli_print_json(const cJSON *v)
{
    char *t = cJSON_Print(v);

    fputs(t, stdout);
    fputc('\n', stdout);
    cJSON_free(t);
    return 0;
}

int cli_list_begin(struct cli_list *l, const struct cli_ctx *c)
{
    memset(l, 0, sizeof(*l));
    l->json = cli_flag(c, "json");
    if (l->json)
        l->arr = cJSON_CreateArray();
    return l->json;
}

int cli_list_run(struct cli_list *l, struct cli_ctx *c,
                 int (*rows)(struct cli_ctx *c, store *st, void *arg), void *arg)
{
    store *st;
    int rc = cli_store(c, &st);

    if (rc)
        return rc;
    cli_list_begin(l, c);
    return cli_list_end(l, rows(c, st, arg));
}

int cli_list_end(struct cli_list *l, int rc)
{
    if (rc == 0 && l->json)
        cli_print_json(l->arr);
    cJSON_Delete(l->arr);
    l->arr = NULL;
    return rc ? cli_fail_err(rc) : EXIT_OK;
}

/* Lay out one line of text (len bytes, no newline) from column *col,
 * breaking on spaces before a word that would pass column 80 and before
 * word number force (-1: none); printed to f unless f is NULL.  *last and
 * *prev receive the numbers of the words that start the last line and the
 * line before it (-1: none); returns the number of words. */
static int lay_out(FILE *f, int *col, int indent, const char *text, size_t len, int force,
                   int *last, int *prev)
{
    const char *p = text, *end = text + len;
    int space = 0, k = 0; /* a space is owed before the next word on this line */

    *last = *prev = -1;
    while (p < end) {
        size_t word = strcspn(p, " ");
        if (word > (size_t)(end - p))
            word = (size_t)(end - p);
        int cols = (int)utf8_count(p, word); /* columns, not bytes */
        if (k == force || (*col > indent && *col + space + cols > 80)) {
            if (f)
                fprintf(f, "\n%*s", indent, "");
            *prev = *last;
            *last = k;
            *col = indent;
            space = 0;
        }
        if (f && space)
            fputc(' ', f);
        if (f)
            fprintf(f, "%.*s", (int)word, p);
        *col += space + cols;
        space = 0;
        p += word;
        k++;
        if (p < end && *p == ' ') {
            while (p < end && *p == ' ')
                p++;
            space = 1;
        }
    }
    return k;
}

/* The columns of word number n of text (len bytes). */
static int word_cols(const char *text, size_t len, int n)
{
    const char *p = text, *end = text + len;

    for (int k = 0; p < end; k++) {
        size_t word = strcspn(p, " ");
        if (word > (size_t)(end - p))
            word = (size_t)(end - p);
        if (k == n)
            return (int)utf8_count(p, word);
        p += word;
        while (p < end && *p == ' ')
            p++;
    }
    return 0;
}

/* Print text from column col, wrapped at 80 columns on spaces (a newline
 * in text starts a new line); continuation lines start at column indent.
 * A wrapped line never ends with one word alone on its last line: the word
 * before goes down with it when there is room. */
static void wrap(FILE *f, int col, int indent, const char *text)
{
    const char *p = text;

    for (;;) {
        size_t len = strcspn(p, "\n");
        int c = col, last, prev, force = -1;
        int n = lay_out(NULL, &c, indent, p, len, -1, &last, &prev);
        if (n >= 3 && last == n - 1 && prev < n - 2 &&
            indent + word_cols(p, len, n - 2) + 1 + word_cols(p, len, n - 1) <= 80)
            force = n - 2;
        lay_out(f, &col, indent, p, len, force, &last, &prev);
        p += len;
        if (*p != '\n')
            break;
        fprintf(f, "\n%*s", p[1] ? indent : 0, "");
        col = indent;
        p++;
    }
    fputc('\n', f);
}

static void print_cmd_help(FILE *f, const struct cli_command *cmd)
{
    const struct cli_opt *o = cmd->opts;
    char head[128];
    strbuf u = STRBUF_INIT;

    /* every line fits 80 columns: the synopsis and the texts wrap (a help
     * text: cut at its cap) */
    strbuf_init(&u, 1 << 14);
    for (int i = 0; o && o[i].name; i++)
        strbuf_addf_cut(&u, "%s[--%s%s%s]", i ? " " : "", o[i].name, o[i].arg ? "\xc2\xa0" : "",
                        o[i].arg ? o[i].arg : "");
    if (cmd->args && *cmd->args)
        strbuf_addf_cut(&u, "%s%s", u.len ? " " : "", cmd->args);
    /* truncation: ok, help text */
    snprintf(head, sizeof(head), "usage: goald [--db PATH] [--config PATH] %s ", cmd->name);
    fputs(head, f);
    /* a no-break space (U+00A0) keeps "--opt ARG" together; shown as a space */
    {
        strbuf w = STRBUF_INIT;
        strbuf_init(&w, 1 << 14);
        for (size_t i = 0; i < u.len; i++) {
            if ((unsigned char)u.buf[i] == 0xc2 && (unsigned char)u.buf[i + 1] == 0xa0) {
                strbuf_addc_cut(&w, '\x01');
                i++;
            } else {
                strbuf_addc_cut(&w, u.buf[i]);
            }
        }
        {
            /* wrap first, then turn the markers back into spaces */
            char *tmp = NULL;
            size_t tlen = 0;
            FILE *mem = xcheck(open_memstream(&tmp, &tlen));
            wrap(mem, (int)strlen(head), (int)strlen(head), strbuf_cstr(&w));
            fclose(mem);
            for (size_t i = 0; i < tlen; i++)
                fputc(tmp[i] == '\x01' ? ' ' : tmp[i], f);
            free(tmp);
        }
        strbuf_release(&w);
    }
    strbuf_release(&u);
    fputc('\n', f);
    wrap(f, 0, 0, cmd->summary);
    if (cmd->details) {
        fputc('\n', f);
        wrap(f, 0, 0, cmd->details);
    }
    fprintf(f, "\noptions:\n");
    for (int i = 0; o && o[i].name; i++) {
        char left[64];
        /* truncation: ok, help text */
        snprintf(left, sizeof(left), "--%s%s%s", o[i].name, o[i].arg ? " " : "",
                 o[i].arg ? o[i].arg : "");
        fprintf(f, "  %-22s ", left);
        wrap(f, 25, 25, o[i].help);
    }
    fprintf(f, "  %-22s %s\n", "--help", "show this help");
}

void cli_print_usage(FILE *f)
{
    fprintf(f, "usage: goald [--db PATH] [--config PATH] COMMAND [ARGS]\n\n"
               "goald carries a goal (JSON) to a verified result on a git repository.\n\n"
               "commands:\n");
    for (int i = 0; cli_commands[i]; i++) {
        char left[64];
        if (cli_commands[i]->hidden)
            continue;
        snprintf(left, sizeof(left), "%s %s", cli_commands[i]->name, /* truncation: ok, help text */
                 cli_commands[i]->args ? cli_commands[i]->args : "");
        fprintf(f, "  %-28s ", left);
        if (strlen(left) > 28)
            fprintf(f, "\n%31s", "");
        wrap(f, 31, 31, cli_commands[i]->summary);
    }
    fprintf(f, "\nglobal options:\n"
               "  --db PATH       the database: a SQLite file or a postgres:// URL\n"
               "                  (GOALD_DB; default store.url,\n"
               "                  else $XDG_STATE_HOME/goald/goald.db)\n"
               "  --config PATH   the config file (GOALD_CONFIG)\n"
               "  --version       print the version\n"
               "\n`goald COMMAND --help` describes a command.\n");
}

/* Find the command named by argv[0] (and argv[1] for two-word names);
 * *used receives how many words were consumed. */
static const struct cli_command *find_command(int argc, char **argv, int *used)
{
    for (int i = 0; cli_commands[i]; i++) {
        const char *name = cli_commands[i]->name;
        const char *sp = strchr(name, ' ');
        if (!sp) {
            if (!strcmp(name, argv[0])) {
                *used = 1;
                return cli_commands[i];
            }
        } else if (argc >= 2 && strlen(argv[0]) == (size_t)(sp - name) &&
                   !strncmp(name, argv[0], (size_t)(sp - name)) && !strcmp(sp + 1, argv[1])) {
            *used = 2;
            return cli_commands[i];
        }
    }
    return NULL;
}

/* Print the subcommands of a group word ("goal", "cron") when it is given
 * alone or with an unknown subcommand; 1 if word is a group. */
static int group_usage(const char *word)
{
    int found = 0;
    size_t n = strlen(word);

    for (int i = 0; cli_commands[i]; i++) {
        const char *name = cli_commands[i]->name;
        if (!strncmp(name, word, n) && name[n] == ' ') {
            if (!found)
                fprintf(stderr, "goald: %s: expected a subcommand:\n", word);
            fprintf(stderr, "  goald %s %s\n", name, cli_commands[i]->args);
            found = 1;
        }
    }
    return found;
}

int cli_dispatch(struct cli_ctx *c, int argc, char **argv)
{
    const struct cli_command *cmd;
    int used = 0;
    int only_pos = 0;

    cmd = find_command(argc, argv, &used);
    if (!cmd) {
        if (group_usage(argv[0]))
            return EXIT_USAGE;
        return cli_fail(EXIT_USAGE, "unknown command \"%s\" (see goald --help)", argv[0]);
    }
    c->cmd = cmd;
    for (int i = used; i < argc; i++) {
        const char *a = argv[i];
        if (!only_pos && !strcmp(a, "--")) {
            only_pos = 1;
            continue;
        }
        if (!only_pos && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            print_cmd_help(stdout, cmd);
            return EXIT_OK;
        }
        if (!only_pos && a[0] == '-' && a[1] == '-') {
            const char *name = a + 2;
            const char *eq = strchr(name, '=');
            size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
            int k = -1;
            for (int j = 0; cmd->opts && cmd->opts[j].name; j++)
                if (strlen(cmd->opts[j].name) == nlen && !strncmp(cmd->opts[j].name, name, nlen))
                    k = j;
            if (k < 0)
                return cli_fail(EXIT_USAGE, "%s: unknown option %.*s (see goald %s --help)",
                                cmd->name, (int)nlen + 2, a, cmd->name);
            if (cmd->opts[k].arg) {
                if (eq)
                    c->val[k] = eq + 1;
                else if (i + 1 < argc)
                    c->val[k] = argv[++i];
                else
                    return cli_fail(EXIT_USAGE, "%s: --%s needs a value %s", cmd->name,
                                    cmd->opts[k].name, cmd->opts[k].arg);
            } else {
                if (eq)
                    return cli_fail(EXIT_USAGE, "%s: --%s takes no value", cmd->name,
                                    cmd->opts[k].name);
                c->val[k] = "";
            }
            continue;
        }
        if (!only_pos && a[0] == '-' && a[1] != '\0')
            return cli_fail(EXIT_USAGE, "%s: unknown option %s (see goald %s --help)", cmd->name, a,
                            cmd->name);
        if (c->npos >= CLI_MAX_POS || c->npos >= cmd->max_pos)
            return cli_fail(EXIT_USAGE, "%s: unexpected argument \"%s\" (usage: goald %s %s)",
                            cmd->name, a, cmd->name, cmd->args ? cmd->args : "");
        c->pos[c->npos++] = a;
    }
    if (c->npos < cmd->min_pos)
        return cli_fail(EXIT_USAGE, "%s: missing argument (usage: goald %s %s)", cmd->name,
                        cmd->name, cmd->args ? cmd->args : "");
    return cmd->run(c);
}
