/*
 * spill.c - the folder where commands' full output is spilled (the bash
 * tool's, a gate's while it runs): goald's state folder, capped.
 */
#include "sandbox/spill.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/path.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

static int is_spill(const char *name)
{
    return !strncmp(name, "bash-", 5) || !strncmp(name, "gate-", 5);
}

struct spill_file {
    char name[NAME_MAX + 1];
    int64_t mtime_ns;
    uint64_t size;
};

static int by_age(const void *a, const void *b)
{
    const struct spill_file *x = a, *y = b;
    if (x->mtime_ns != y->mtime_ns)
        return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Tidy the spill folder in one walk: spills older than tools.spill_keep_h
 * go (that part at most once a minute), then, when want more bytes would
 * pass tools.spill_total_mb, the oldest spills go until they fit.  Best
 * effort: a folder we cannot list is left alone. */
static void spill_tidy(const char *dir, uint64_t want)
{
    static int64_t last;
    int64_t now = time_now_ms();
    int64_t keep = config_int(CFG_TOOLS_SPILL_KEEP_H) * 3600 * 1000;
    int expire = now - last >= 60 * 1000;
    uint64_t cap = (uint64_t)config_int(CFG_TOOLS_SPILL_TOTAL_MB) << 20, total = 0;
    struct spill_file *v = NULL;
    size_t n = 0, alloc = 0;
    struct dirent *de;
    DIR *d;

    if (!expire && !want)
        return;
    if (expire)
        last = now;
    if (!(d = opendir(dir)))
        return;
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        if (!is_spill(de->d_name) ||
            fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (expire && now - (int64_t)st.st_mtime * 1000 > keep) {
            unlinkat(dirfd(d), de->d_name, 0);
            continue;
        }
        if (!want)
            continue;
        if (n == alloc) {
            alloc = alloc ? alloc * 2 : 64;
            v = xrealloc(v, alloc * sizeof(*v));
        }
        /* truncation: ok, name holds NAME_MAX + 1, as d_name */
        snprintf(v[n].name, sizeof(v[n].name), "%s", de->d_name);
        v[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        v[n].size = (uint64_t)st.st_size;
        total += v[n].size;
        n++;
    }
    if (n && total + want > cap) {
        qsort(v, n, sizeof(*v), by_age);
        for (size_t i = 0; i < n && total + want > cap; i++) {
            if (unlinkat(dirfd(d), v[i].name, 0) == 0) {
                total -= v[i].size;
                log_debug("sandbox: spill folder over tools.spill_total_mb: removed %s", v[i].name);
            }
        }
    }
    free(v);
    closedir(d);
}

int sandbox_spill_prepare(store *st, const char *dir_override, uint64_t want, char *out, size_t n)
{
    const char *d = dir_override ? dir_override : config_str(CFG_TOOLS_SPILL_DIR);
    char db[PATH_MAX], parent[PATH_MAX];
    struct stat sb;
    int w;

    if (d && *d) {
        w = snprintf(out, n, "%s", d);
    } else {
        /* beside the database: goald's state folder, not the host's TMPDIR */
        int rc = 0;
        if (st && store_path(st) && strcmp(store_path(st), ":memory:") != 0)
            rc = path_fmt(db, sizeof(db), "%s", store_path(st));
        else
            rc = store_default_path(db, sizeof(db));
        if (rc)
            return rc;
        if (store_local_dir(parent, sizeof(parent), db) != 0)
            return err_set(ERR_INVALID, "%s: path too long", db);
        if (!fs_is_dir(parent) && fs_mkdir_p(parent, 0700) != 0)
            return err_wrap(ERR_IO, "the spill folder");
        w = snprintf(out, n, "%s/spill", parent);
    }
    if (w < 0 || (size_t)w >= n)
        return err_set(ERR_INVALID, "the spill folder path is too long");
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return err_set(ERR_IO, "%s: cannot create the spill folder: %s", out, strerror(errno));
    if (lstat(out, &sb) != 0 || !S_ISDIR(sb.st_mode) || sb.st_uid != getuid())
        return err_set(ERR_IO, "%s: not a folder of ours", out);
    if ((sb.st_mode & 077) && chmod(out, 0700) != 0)
        return err_set(ERR_IO, "%s: cannot make it private: %s", out, strerror(errno));
    spill_tidy(out, want);
    return 0;
}

