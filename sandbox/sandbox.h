/*
 * sandbox.h - run a command confined by bubblewrap.
 *
 * sandbox_run() runs a shell command (bash -c) or an argv inside a
 * bubblewrap sandbox built from the configuration (util/config.h,
 * sandbox.*): the system folders read-only, the worktree read-write at its
 * own path and as the working directory, its .git and the git folders
 * named by the spec read-only (the repository's config masked), a private
 * size-capped /tmp, an empty HOME, no network, new user/PID/IPC/UTS
 * namespaces and session, no capabilities, --die-with-parent, a clean
 * environment, rlimits, a pids cgroup where one can be made, and a
 * wall-clock timeout that kills every process of the command.  stdout and
 * stderr are captured: the tail of each (sandbox.output_kb) is kept with
 * the total byte and line counts; the full output may be spilled to a file.
 * When goald runs as root, bubblewrap and the command run as sandbox.uid /
 * sandbox.gid instead, and the folder the command writes is given to that
 * user before it starts (sandbox/drop.h).
 *
 * Without bubblewrap, sandbox_run() refuses (ERR_POLICY, the message says
 * how to install it).  sandbox.mode = none (GOALD_SANDBOX=none) runs the
 * command unconfined (rlimits, clean environment and timeout still apply)
 * and records a `sandbox.unconfined` warning event for each command.
 *
 * docs/sandbox.md says what this protects and what it does not.
 */
#ifndef GOALD_SANDBOX_SANDBOX_H
#define GOALD_SANDBOX_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* Called with each chunk of stdout as it arrives (before the tail is cut);
 * return non-zero to stop the command (it is killed; result.stopped = 1). */
typedef int (*sandbox_data_fn)(void *arg, const char *data, size_t len);

struct sandbox_spec {
    const char *root;        /* the worktree: absolute, an existing folder; required */
    const char *root_src;    /* NULL, or the folder bound AT root instead of root itself
                              * (a throw-away copy of the worktree for gates) */
    /* git metadata bound read-only, from goald's records (never read from
     * the worktree): the repository's common folder and the worktree's
     * admin folder beneath it (<common>/worktrees/<name>); both NULL for a
     * folder that is not a goal's worktree.  See add_git() in sandbox.c. */
    const char *git_common;
    const char *git_dir;
    const char *command;     /* run as: bash -c COMMAND; or NULL and argv */
    const char *const *argv; /* NULL-terminated; argv[0] looked up in PATH */
    const char *const *env;  /* extra "NAME=value" entries (may be NULL) */
    int timeout_ms;          /* 0: sandbox.timeout_s */
    int merge_stderr;        /* stderr goes to the stdout stream (one ordered stream) */
    const char *spill_path;  /* when set, the whole stdout (up to spill_max) goes here */
    size_t spill_max;        /* 0: unlimited */
    size_t tail_cap;         /* bytes of each stream kept; 0: sandbox.output_kb */
    sandbox_data_fn on_stdout;
    void *on_stdout_arg;
    int stdin_fd; /* -1 or 0: /dev/null; else dup'd to the command's stdin */
    int direct;   /* run without bubblewrap: only for trusted programs with
                   * fixed arguments (rg, fd) that goald itself starts;
                   * rlimits, timeout and capture still apply */
    int cwd_fd;   /* with direct: the working directory as an fd (else root) */
    /* events (sandbox.unconfined): st may be NULL */
    store *st;
    const char *goal_id, *item_id, *run_id;
};

struct sandbox_stream {
    char *data; /* the kept tail, NUL-terminated; owned by the result */
    size_t len;
    uint64_t total_bytes; /* everything the command wrote */
    uint64_t total_lines; /* newlines, plus one for an unterminated last line */
    int truncated;        /* total_bytes > len */
};

struct sandbox_result {
    int exit_code;     /* exit status; 128 + signal when killed by one */
    int term_signal;   /* the signal that ended it, 0 if it exited */
    int timed_out;     /* the wall-clock timeout fired */
    int stopped;       /* on_stdout asked to stop */
    int unconfined;    /* ran with sandbox.mode = none */
    int pids_cgroup;   /* a pids cgroup capped its process count */
    int memory_cgroup; /* a memory cgroup capped its processes' memory together */
    int64_t duration_ms;
    int spilled;                    /* spill_path holds the full output (spill_max not hit) */
    struct sandbox_stream out, err; /* err is empty with merge_stderr */
};

/* Run spec; on 0 *res is filled (the command may still have failed: see
 * exit_code, timed_out) and must be released with sandbox_result_release().
 * Errors (nothing ran; *res is empty): ERR_INVALID (bad spec or config),
 * ERR_POLICY (no bubblewrap; the message names `apt-get install
 * bubblewrap`), ERR_IO (fork, pipes). */
int sandbox_run(const struct sandbox_spec *spec, struct sandbox_result *res);
void sandbox_result_release(struct sandbox_result *res);

/* The bubblewrap binary that would be used, into out.  0, or ERR_POLICY
 * with the install hint in the message. */
int sandbox_find_bwrap(char *out, size_t n);

/* 1 when sandbox.mode is none (GOALD_SANDBOX=none). */
int sandbox_unconfined(void);

/* For `goald doctor`: run `true` in the sandbox on a temporary root.
 * 0 when it exits 0; else an error with the reason in the message.
 * detail (may be NULL) receives a one-line summary ("bubblewrap 0.8.0 at
 * /usr/bin/bwrap, pids cgroup: yes"). */
int sandbox_selftest(char *detail, size_t n);

/* The bubblewrap arguments sandbox_run() would use for spec (for tests and
 * diagnostics), one per line, into *out (malloc'd: the caller frees it
 * with free()). */
int sandbox_describe(const struct sandbox_spec *spec, char **out);

#endif
