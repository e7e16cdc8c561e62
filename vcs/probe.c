#include "vcs/probe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define QUICK_NAME_MAX 200
#define QUICK_CONFIG_MAX (64 * 1024)
#define QUICK_PACKED_MAX (64L * 1024 * 1024)

static int is_name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_' || c == '.' || c == '-';
}

int vcs_quick_branch_name(const char *name)
{
    size_t len = name ? strlen(name) : 0;
    const char *comp = name;

    if (len == 0 || len > QUICK_NAME_MAX)
        return 0;
    for (const char *p = name;; p++) {
        if (*p == '/' || *p == '\0') {
            size_t n = (size_t)(p - comp);
            unsigned char first = n ? (unsigned char)comp[0] : 0;
            if (n == 0 || !(is_name_char(first) && first != '.' && first != '-'))
                return 0;
            if (comp[n - 1] == '.' || (n >= 5 && memcmp(comp + n - 5, ".lock", 5) == 0))
                return 0;
            if (*p == '\0')
                return 1;
            comp = p + 1;
        } else if (!is_name_char((unsigned char)*p) || (p[0] == '.' && p[1] == '.')) {
            return 0;
        }
    }
}

/* The whole of a small regular file (not a symlink) into buf, NUL-ended;
 * its length, or -1 when missing, unreadable or longer than n - 1. */
static long read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    size_t len = 0;
    ssize_t r;

    if (fd < 0)
        return -1;
    while (len < n && (r = read(fd, buf + len, n - len)) != 0) {
        if (r < 0) {
            if (errno == EINTR)
                continue;
            close(fd);
            return -1;
        }
        len += (size_t)r;
    }
    close(fd);
    if (len >= n)
        return -1;
    buf[len] = '\0';
    return (long)len;
}

/* s is exactly 40 lowercase hex digits, then "\n" or nothing. */
static int is_oid_line(const char *s)
{
    size_t i;

    for (i = 0; i < 40; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return s[40] == '\0' || (s[40] == '\n' && s[41] == '\0');
}

static int is_dir_nofollow(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The config sets nothing that changes where things are or how they are
 * read: no core.worktree, core.bare only false, no extensions or
 * includes, format version 0 or 1.  Case-insensitive, conservative: a
 * word in a comment is enough to say no. */
static int config_plain(const char *gitdir)
{
    char path[PATH_MAX + 16];
    char *buf = malloc(QUICK_CONFIG_MAX);
    int plain = 0;
    long len;

    if (snprintf(path, sizeof(path), "%s/config", gitdir) >= (int)sizeof(path))
        goto out;
    if (!buf || (len = read_small(path, buf, QUICK_CONFIG_MAX)) < 0)
        goto out;
    for (long i = 0; i < len; i++)
        if (buf[i] >= 'A' && buf[i] <= 'Z')
            buf[i] = (char)(buf[i] - 'A' + 'a');
    if (strstr(buf, "worktree") || strstr(buf, "[extensions") || strstr(buf, "include"))
        goto out;
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        char *p = line, *eq;
        size_t klen, llen = strcspn(line, "\n");

        while (*p == ' ' || *p == '\t')
            p++;
        /* the shapes git writes: sections, comments, "key = value";
         * anything else (a continued line, text libgit2 may refuse) goes
         * to libgit2 */
        if (llen > 0 && line[llen - 1] == '\\')
            goto out;
        if (!(*p == '\n' || *p == '\r' || *p == '\0' || *p == '[' || *p == '#' || *p == ';' ||
              (*p >= 'a' && *p <= 'z')))
            goto out;
        if (strncmp(p, "bare", 4) == 0)
            klen = 4;
        else if (strncmp(p, "repositoryformatversion", 23) == 0)
            klen = 23;
        else
            continue;
        for (eq = p + klen; *eq == ' ' || *eq == '\t'; eq++)
            ;
        if (*eq != '=')
            goto out; /* "bare" alone means true; anything odd: ask libgit2 */
        for (eq++; *eq == ' ' || *eq == '\t'; eq++)
            ;
        size_t vlen = strcspn(eq, " \t\r\n;#");
        const char *rest = eq + vlen;
        while (*rest == ' ' || *rest == '\t' || *rest == '\r')
            rest++;
        if (*rest != '\n' && *rest != '\0')
            goto out;
        if (klen == 4 && !(vlen == 5 && strncmp(eq, "false", 5) == 0))
            goto out;
        if (klen == 23 && !(vlen == 1 && (eq[0] == '0' || eq[0] == '1')))
            goto out;
    }
    plain = 1;
out:
    free(buf);
    return plain;
}

/* refs/heads/<branch> as a loose ref: 1 holds an object id, 0 absent,
 * -1 anything else (symbolic, a folder, garbage). */
static int loose_branch(const char *gitdir, const char *branch)
{
    char path[PATH_MAX + 256];
    char buf[128];
    struct stat st;

    if (snprintf(path, sizeof(path), "%s/refs/heads/%s", gitdir, branch) >= (int)sizeof(path))
        return -1;
    if (lstat(path, &st) != 0)
        return (errno == ENOENT || errno == ENOTDIR) ? 0 : -1;
    if (!S_ISREG(st.st_mode))
        return -1;
    if (read_small(path, buf, sizeof(buf)) < 0 || !is_oid_line(buf))
        return -1;
    return 1;
}

/* refs/heads/<branch> in packed-refs: 1 found, 0 not. */
static int packed_branch(const char *gitdir, const char *branch)
{
    char path[PATH_MAX + 32];
    char line[4096];
    struct stat st;
    size_t blen = strlen(branch);
    int found = 0;
    FILE *f;

    if (snprintf(path, sizeof(path), "%s/packed-refs", gitdir) >= (int)sizeof(path))
        return 0;
    if (!(f = fopen(path, "re")))
        return 0;
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > QUICK_PACKED_MAX) {
        fclose(f);
        return 0;
    }
    while (!found && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strlen(line) != 41 + 11 + blen || line[40] != ' ' ||
            strncmp(line + 41, "refs/heads/", 11) != 0 || strcmp(line + 52, branch) != 0)
            continue;
        line[40] = '\0';
        found = is_oid_line(line);
    }
    fclose(f);
    return found;
}

int vcs_quick_probe(const char *path, const char *branch, char *abs_out, size_t abs_n,
                    char *head_out, size_t head_n)
{
    char wd[PATH_MAX];
    char gitdir[PATH_MAX + 8];
    char sub[PATH_MAX + 32];
    char head[512];
    const char *hb = "";
    struct stat st;
    long len;

    if (!path || !*path || !realpath(path, wd))
        return 0;
    if (snprintf(gitdir, sizeof(gitdir), "%s%s.git", wd, strcmp(wd, "/") ? "/" : "") >=
        (int)sizeof(gitdir))
        return 0;
    /* the layout libgit2 checks: a .git folder (not a file, not a link)
     * with HEAD, objects/ and refs/, owned by us, and not a linked worktree */
    if (lstat(gitdir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return 0;
    if (stat(wd, &st) != 0 || st.st_uid != geteuid())
        return 0;
    snprintf(sub, sizeof(sub), "%s/objects", gitdir);
    if (!is_dir_nofollow(sub))
        return 0;
    snprintf(sub, sizeof(sub), "%s/refs", gitdir);
    if (!is_dir_nofollow(sub))
        return 0;
    snprintf(sub, sizeof(sub), "%s/commondir", gitdir);
    if (lstat(sub, &st) == 0 || errno != ENOENT)
        return 0;
    if (!config_plain(gitdir))
        return 0;

    snprintf(sub, sizeof(sub), "%s/HEAD", gitdir);
    if ((len = read_small(sub, head, sizeof(head))) < 0)
        return 0;
    if (strncmp(head, "ref: refs/heads/", 16) == 0) {
        char *name = head + 16;
        name[strcspn(name, "\n")] = '\0';
        if (!vcs_quick_branch_name(name) || loose_branch(gitdir, name) < 0)
            return 0;
        hb = name;
    } else if (!is_oid_line(head)) {
        return 0;
    }

    if (branch) {
        int loose;
        if (!vcs_quick_branch_name(branch) || (loose = loose_branch(gitdir, branch)) < 0)
            return 0;
        if (!loose && !packed_branch(gitdir, branch))
            return 0; /* libgit2 says so, in its words */
    }
    if (abs_out && snprintf(abs_out, abs_n, "%s", wd) >= (int)abs_n)
        return 0;
    if (head_out && snprintf(head_out, head_n, "%s", hb) >= (int)head_n)
        return 0;
    return 1;
}
