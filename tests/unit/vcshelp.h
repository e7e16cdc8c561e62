/*
 * vcshelp.h - helpers for the vcs unit tests: run the real git CLI to
 * make repositories and to check what libgit2 wrote.  Header-only, like
 * testutil.h.
 */
#ifndef GOALD_TESTS_VCSHELP_H
#define GOALD_TESTS_VCSHELP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run a shell command (formatted); its exit status.  Output goes to the
 * test's stderr. */
static inline int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline int sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

/* Run a shell command and keep its stdout (trailing newlines cut) in a
 * static buffer, valid until the next call. */
static inline const char *cap(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline const char *cap(const char *fmt, ...)
{
    static char out[65536];
    char cmd[8192];
    va_list ap;
    FILE *p;
    size_t n;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    out[0] = '\0';
    p = popen(cmd, "r");
    if (!p)
        return out;
    n = fread(out, 1, sizeof(out) - 1, p);
    out[n] = '\0';
    pclose(p);
    while (n > 0 && out[n - 1] == '\n')
        out[--n] = '\0';
    return out;
}

static inline void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    fputs(text, f);
    fclose(f);
}

/* A repository with two commits on main: README, old.txt, .gitignore
 * (ignoring *.log and build/). */
static inline int make_repo(const char *dir)
{
    return sh("set -e; mkdir -p '%s' && cd '%s' && git init -q -b main . && "
              "git config user.email t@example.com && git config user.name test && "
              "printf 'hello\\n' > README && printf 'old\\n' > old.txt && "
              "printf '*.log\\nbuild/\\n' > .gitignore && git add -A && git commit -q -m init && "
              "printf 'more\\n' >> README && git commit -q -am second",
              dir, dir);
}

/* libgit2 1.5 (Debian 12) leaks a PCRE2 match block on every regex
 * search that does not match (config look-ups during remote look-up and
 * push), fixed upstream by libgit2/libgit2#6382 (in 1.6).  The vcs code
 * does not use PCRE2 itself, so blocks allocated inside libpcre2 are
 * suppressed, in the vcs tests only. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libpcre2-8.so\n";
}

#endif
