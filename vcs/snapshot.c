/*
 * snapshot.c - the tree a worktree would be committed as, without writing
 * into the user's repository, and the guard that bounds what goald reads
 * of the worktree to stage it.
 *
 * Every turn of a run asks for the worktree's state tree (the progress
 * fingerprint, the gate evidence).  Staging into the repository's object
 * store would leave loose objects behind on every call; here the objects
 * go to an in-memory store instead: trees are kept (libgit2 reads them
 * back to fill the index's tree cache), blobs are hashed as they stream
 * by and only their id, type and size are kept.  Reads of objects that
 * exist already are passed to the repository's own object database.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/config.h"
#include "util/err.h"
#include "util/xalloc.h"
#include "vcs/internal.h"
#include "vcs/worktree.h"

/* ---- the guard ---- */

struct guard {
    git_repository *repo;
    git_index *index;
    int64_t cap;
    char rel[PATH_MAX]; /* the folder being walked, relative, "" or ending in '/' */
};

static void human_size(char *out, size_t n, int64_t b)
{
    if (b >= ((int64_t)1 << 30))
        /* truncation: ok, a size shown */
        snprintf(out, n, "%.1f GiB", (double)b / (double)((int64_t)1 << 30));
    else if (b >= ((int64_t)1 << 20))
        /* truncation: ok, a size shown */
        snprintf(out, n, "%.1f MiB", (double)b / (double)((int64_t)1 << 20));
    else
        snprintf(out, n, "%lld bytes", (long long)b); /* truncation: ok, a size shown */
}

/* Whether rel (a path relative to the work folder; folders end in '/')
 * is ignored by .gitignore. */
static int ignored(struct guard *g, const char *rel)
{
    int ig = 0;

    if (git_ignore_path_is_ignored(&ig, g->repo, rel) < 0) {
        git_error_clear();
        return 0;
    }
    return ig;
}

/* Whether the index tracks anything beneath the folder rel ("a/b/"). */
static int tracks_beneath(struct guard *g, const char *rel)
{
    size_t pos;

    if (git_index_find_prefix(&pos, g->index, rel) == 0)
        return 1;
    git_error_clear();
    return 0;
}

/* Whether the index has rel (a file, stage 0). */
static int tracked(struct guard *g, const char *rel)
{
    return git_index_get_bypath(g->index, rel, 0) != NULL;
}

/* An unchanged tracked file: the index has it with this size and mtime,
 * compared whole (sizes as 64 bits: the index keeps 32, so a file of 4 GiB
 * + n never passes for one of n bytes; seconds without truncation, and
 * nanoseconds when the index recorded them).  Stricter than libgit2's own
 * test, so a file it would read again is never waved through here. */
static int unchanged(struct guard *g, const char *rel, const struct stat *st)
{
    const git_index_entry *e = git_index_get_bypath(g->index, rel, 0);

    if (!e || (uint64_t)st->st_size != (uint64_t)e->file_size ||
        (int64_t)st->st_mtim.tv_sec != (int64_t)e->mtime.seconds)
        return 0;
    return e->mtime.nanoseconds == 0 || (uint64_t)st->st_mtim.tv_nsec == e->mtime.nanoseconds;
}

/* A submodule the index records at rel (no final '/'): libgit2 stages its
 * commit id and never reads inside. */
static int is_submodule(struct guard *g, const char *rel)
{
    const git_index_entry *e = git_index_get_bypath(g->index, rel, 0);

    return e && e->mode == GIT_FILEMODE_COMMIT;
}

/* libgit2 reads these while it stages, following links and blocking on
 * FIFOs: only regular files within the cap are let through. */
static int check_git_files(struct guard *g, int dfd)
{
    static const char *const names[] = {".gitignore", ".gitattributes", ".gitmodules"};
    struct stat st;
    char size[32];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        if (!S_ISREG(st.st_mode))
            return err_set(ERR_POLICY,
                           "%s%s is a %s: goald reads .gitignore, .gitattributes and .gitmodules "
                           "only as regular files: remove it",
                           g->rel, names[i],
                           S_ISLNK(st.st_mode)   ? "symbolic link"
                           : S_ISDIR(st.st_mode) ? "folder"
                                                 : "special file");
        if (st.st_size > g->cap) {
            human_size(size, sizeof(size), (int64_t)st.st_size);
            return err_set(ERR_TOOBIG, "%s%s is %s, over tools.max_file_mb (%lld MiB): remove it",
                           g->rel, names[i], size, (long long)(g->cap >> 20));
        }
    }
    return 0;
}

/* Walk the open folder dfd (g->rel names it); dfd is closed here. */
static int walk(struct guard *g, int dfd)
{
    DIR *d = fdopendir(dfd);
    struct dirent *e;
    struct stat gst;
    size_t base = strlen(g->rel);
    int rc = 0;

    if (!d) {
        close(dfd);
        return err_set(ERR_IO, "%s: cannot read the folder: %s", *g->rel ? g->rel : ".",
                       strerror(errno));
    }
    /* a .git below the root (`git init sub`, a vendored clone): libgit2
     * refuses the folder ("invalid path 'sub/'") on every turn */
    if (base && fstatat(dfd, ".git", &gst, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = err_set(ERR_POLICY,
                     "%s.git: a nested repository goald will not commit: remove it or add %s to "
                     ".gitignore",
                     g->rel, g->rel);
        goto out;
    }
    if ((rc = check_git_files(g, dfd)) != 0)
        goto out;
    while (!rc && (e = readdir(d))) {
        struct stat st;
        size_t len = strlen(e->d_name);

        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcasecmp(e->d_name, ".git"))
            continue;
        if (base + len + 2 >= sizeof(g->rel)) {
            rc = err_set(ERR_POLICY, "%s%s: path too long", g->rel, e->d_name);
            break;
        }
        memcpy(g->rel + base, e->d_name, len + 1);
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            g->rel[base] = '\0';
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            int sub;
            if (is_submodule(g, g->rel)) {
                g->rel[base] = '\0';
                continue;
            }
            g->rel[base + len] = '/';
            g->rel[base + len + 1] = '\0';
            /* libgit2 goes into an ignored folder only for tracked files */
            if (ignored(g, g->rel) && !tracks_beneath(g, g->rel)) {
                g->rel[base] = '\0';
                continue;
            }
            sub = openat(dfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0)
                rc = err_set(ERR_IO, "%s: %s", g->rel, strerror(errno));
            else
                rc = walk(g, sub);
        } else if (S_ISREG(st.st_mode) && st.st_size > g->cap &&
                   /* .gitignore spares untracked files only: libgit2
                    * stages changes to tracked ones whatever it says */
                   !(ignored(g, g->rel) && !tracked(g, g->rel)) && !unchanged(g, g->rel, &st)) {
            char size[32];
            human_size(size, sizeof(size), (int64_t)st.st_size);
            rc = err_set(ERR_TOOBIG,
                         "%s is %s, over tools.max_file_mb (%lld MiB): remove it or add it to "
                         ".gitignore",
                         g->rel, size, (long long)(g->cap >> 20));
        }
        /* links are staged as links (their target text); FIFOs, sockets
         * and devices are skipped by libgit2 without being opened */
        g->rel[base] = '\0';
    }
out:
    closedir(d);
    return rc;
}

int vcs_guard_changes(git_repository *repo)
{
    struct guard g;
    const char *wd = git_repository_workdir(repo);
    int fd, rc;

    memset(&g, 0, sizeof(g));
    if (!wd)
        return err_set(ERR_INVALID, "a bare repository has no work folder");
    g.repo = repo;
    g.cap = config_int(CFG_TOOLS_MAX_FILE_MB) << 20;
    if (git_repository_index(&g.index, repo) < 0)
        return vcs_git_err(ERR_FAIL, "%s: cannot open the index", wd);
    if (git_index_read(g.index, 1) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: cannot read the index", wd);
        goto out;
    }
    fd = open(wd, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        rc = err_set(ERR_IO, "%s: %s", wd, strerror(errno));
        goto out;
    }
    rc = walk(&g, fd);
out:
    git_index_free(g.index);
    return rc;
}

/* ---- the in-memory object store ---- */

struct snap_obj {
    git_oid id;
    git_object_t type;
    size_t size;
    void *data; /* trees only */
    int used;
};

struct snap_backend {
    git_odb_backend parent;
    git_odb *real; /* the repository's own database, for reads */
    struct snap_obj *slot;
    size_t nslots, used;
};

struct snap_stream {
    git_odb_stream parent;
    git_object_t type;
    size_t size;
};

static size_t slot_of(const struct snap_backend *b, const git_oid *id)
{
    size_t h;

    memcpy(&h, id->id, sizeof(h));
    return h & (b->nslots - 1);
}

static struct snap_obj *find(struct snap_backend *b, const git_oid *id)
{
    for (size_t i = slot_of(b, id);; i = (i + 1) & (b->nslots - 1)) {
        if (!b->slot[i].used)
            return NULL;
        if (git_oid_equal(&b->slot[i].id, id))
            return &b->slot[i];
    }
}

static int put(struct snap_backend *b, const git_oid *id, git_object_t type, const void *data,
               size_t size)
{
    size_t i;

    if (find(b, id))
        return 0;
    if ((b->used + 1) * 2 > b->nslots) {
        struct snap_obj *old = b->slot;
        size_t n = b->nslots;
        struct snap_obj *v = xcalloc(n * 2, sizeof(*v));
        b->slot = v;
        b->nslots = n * 2;
        for (size_t k = 0; k < n; k++) {
            if (!old[k].used)
                continue;
            for (i = slot_of(b, &old[k].id); v[i].used; i = (i + 1) & (b->nslots - 1))
                ;
            v[i] = old[k];
        }
        free(old);
    }
    for (i = slot_of(b, id); b->slot[i].used; i = (i + 1) & (b->nslots - 1))
        ;
    b->slot[i].id = *id;
    b->slot[i].size = size;
    b->slot[i].data = NULL;
    if (type == GIT_OBJECT_TREE && size) {
        b->slot[i].data = xmalloc(size);
        memcpy(b->slot[i].data, data, size);
    }
    b->slot[i].type = type;
    b->slot[i].used = 1;
    b->used++;
    return 0;
}

static int snap_read(void **out, size_t *len, git_object_t *type, git_odb_backend *be,
                     const git_oid *id)
{
    struct snap_backend *b = (struct snap_backend *)be;
    struct snap_obj *o = find(b, id);
    git_odb_object *obj = NULL;
    const void *src;

    if (o) {
        if (o->type != GIT_OBJECT_TREE)
            return GIT_ENOTFOUND; /* a blob's content is not kept */
        src = o->data;
        *len = o->size;
        *type = o->type;
    } else {
        int rc = git_odb_read(&obj, b->real, id);
        if (rc < 0)
            return rc;
        src = git_odb_object_data(obj);
        *len = git_odb_object_size(obj);
        *type = git_odb_object_type(obj);
    }
    *out = git_odb_backend_data_alloc(be, *len ? *len : 1);
    if (!*out) {
        git_odb_object_free(obj);
        return -1;
    }
    if (*len)
        memcpy(*out, src, *len);
    git_odb_object_free(obj);
    return 0;
}

static int snap_read_header(size_t *len, git_object_t *type, git_odb_backend *be, const git_oid *id)
{
    struct snap_backend *b = (struct snap_backend *)be;
    struct snap_obj *o = find(b, id);

    if (o) {
        *len = o->size;
        *type = o->type;
        return 0;
    }
    return git_odb_read_header(len, type, b->real, id);
}

static int snap_read_prefix(git_oid *full, void **out, size_t *len, git_object_t *type,
                            git_odb_backend *be, const git_oid *prefix, size_t n)
{
    struct snap_backend *b = (struct snap_backend *)be;
    git_odb_object *obj = NULL;
    int rc = git_odb_read_prefix(&obj, b->real, prefix, n);

    if (rc < 0)
        return rc;
    *full = *git_odb_object_id(obj);
    *len = git_odb_object_size(obj);
    *type = git_odb_object_type(obj);
    *out = git_odb_backend_data_alloc(be, *len ? *len : 1);
    if (*out && *len)
        memcpy(*out, git_odb_object_data(obj), *len);
    git_odb_object_free(obj);
    return *out ? 0 : -1;
}

static int snap_exists(git_odb_backend *be, const git_oid *id)
{
    struct snap_backend *b = (struct snap_backend *)be;

    return find(b, id) != NULL || git_odb_exists(b->real, id);
}

static int snap_exists_prefix(git_oid *out, git_odb_backend *be, const git_oid *prefix, size_t n)
{
    struct snap_backend *b = (struct snap_backend *)be;

    return git_odb_exists_prefix(out, b->real, prefix, n);
}

static int snap_write(git_odb_backend *be, const git_oid *id, const void *data, size_t len,
                      git_object_t type)
{
    return put((struct snap_backend *)be, id, type, data, len);
}

/* The odb layer hashes what streams by; the stream only counts. */
static int stream_write(git_odb_stream *s, const char *buf, size_t len)
{
    (void)buf;
    ((struct snap_stream *)s)->size += len;
    return 0;
}

static int stream_finalize(git_odb_stream *s, const git_oid *id)
{
    struct snap_stream *ss = (struct snap_stream *)s;

    return put((struct snap_backend *)s->backend, id, ss->type, NULL, ss->size);
}

static void stream_free(git_odb_stream *s)
{
    free(s);
}

static int snap_writestream(git_odb_stream **out, git_odb_backend *be, git_object_size_t size,
                            git_object_t type)
{
    struct snap_stream *s = xcalloc(1, sizeof(*s));

    (void)size;
    s->parent.backend = be;
    s->parent.mode = GIT_STREAM_WRONLY;
    s->parent.write = stream_write;
    s->parent.finalize_write = stream_finalize;
    s->parent.free = stream_free;
    s->type = type;
    *out = &s->parent;
    return 0;
}

static void snap_free(git_odb_backend *be)
{
    struct snap_backend *b = (struct snap_backend *)be;

    for (size_t i = 0; i < b->nslots; i++)
        free(b->slot[i].data);
    free(b->slot);
    git_odb_free(b->real);
    free(b);
}

static int snap_backend_new(git_odb_backend **out, git_odb *real)
{
    struct snap_backend *b = xcalloc(1, sizeof(*b));

    b->slot = xcalloc(b->nslots = 256, sizeof(*b->slot));
    b->parent.version = GIT_ODB_BACKEND_VERSION;
    b->parent.read = snap_read;
    b->parent.read_prefix = snap_read_prefix;
    b->parent.read_header = snap_read_header;
    b->parent.write = snap_write;
    b->parent.writestream = snap_writestream;
    b->parent.exists = snap_exists;
    b->parent.exists_prefix = snap_exists_prefix;
    b->parent.free = snap_free;
    b->real = real;
    *out = &b->parent;
    return 0;
}

int vcs_snapshot_tree(git_oid *out, vcs_worktree *wt)
{
    git_repository *repo = NULL;
    git_odb *real = NULL, *odb = NULL;
    git_odb_backend *be = NULL;
    int rc;

    if ((rc = vcs_guard_changes(wt->repo)) != 0)
        return rc;
    /* a repository of its own: its object cache and index never meet the
     * handle's, and its database holds the in-memory store alone */
    if (git_repository_open_ext(&repo, wt->admin, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL) < 0)
        return vcs_git_err(ERR_FAIL, "%s: cannot open the worktree's git folder", wt->admin);
    if (git_repository_odb(&real, repo) < 0) {
        rc = vcs_git_err(ERR_FAIL, "%s: object database", wt->path);
        goto out;
    }
    if ((rc = snap_backend_new(&be, real)) != 0)
        goto out;
    real = NULL; /* owned by the backend */
    if (git_odb_new(&odb) < 0 || git_odb_add_backend(odb, be, 1) < 0) {
        be->free(be); /* not taken by the database */
        rc = vcs_git_err(ERR_FAIL, "%s: in-memory object store", wt->path);
        goto out;
    }
    git_repository_set_odb(repo, odb);
    /* staged as a commit stages (the index file is only read: the new
     * objects go to the in-memory store) */
    rc = vcs_stage_all(out, repo, 0);
out:
    git_odb_free(odb);
    git_odb_free(real);
    git_repository_free(repo);
    return rc;
}
