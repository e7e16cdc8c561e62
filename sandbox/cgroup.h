/*
 * cgroup.h - a pids (and memory) cgroup per sandboxed command (internal to
 * sandbox/).
 *
 * RLIMIT_NPROC does not bind root (the kernel exempts the initial user),
 * so when goald runs as root a fork bomb is only capped by a pids cgroup;
 * and RLIMIT_AS is per process, so only a memory cgroup caps a command's
 * processes together.  sandbox_cgroup_create() makes them beneath goald's
 * own cgroups: in the cgroup v1 pids and memory hierarchies, or in cgroup
 * v2 when the controllers can be enabled there.  Best effort: it reports
 * what worked.
 */
#ifndef GOALD_SANDBOX_CGROUP_H
#define GOALD_SANDBOX_CGROUP_H

#include <stddef.h>

struct sandbox_cgroup {
    int active;        /* 1 when the pids cgroup exists */
    char dir[512];     /* its folder */
    char procs[560];   /* its cgroup.procs file (prepared before fork) */
    int mem_active;    /* 1 when a memory limit applies */
    char mem_dir[512]; /* cgroup v1: the memory cgroup's own folder, else "" */
    char mem_procs[560];
};

/* Create a cgroup with pids.max = pids_max and, when mem_bytes > 0 and a
 * memory controller is available, a memory limit of mem_bytes.  0 with
 * cg->active = 1 on success (cg->mem_active says whether the memory limit
 * took); -1 (no message, cg->active = 0) when no pids cgroup can be made. */
int sandbox_cgroup_create(struct sandbox_cgroup *cg, long pids_max, long long mem_bytes);

/* In a forked child, before exec: move the calling process into cg.
 * Async-signal-safe.  0 or -1. */
int sandbox_cgroup_enter(const struct sandbox_cgroup *cg);

/* Send sig to every process in cg; returns how many were signalled. */
int sandbox_cgroup_signal(const struct sandbox_cgroup *cg, int sig);

/* Kill what is left, wait (up to ~2 s) for it to empty, remove it. */
void sandbox_cgroup_destroy(struct sandbox_cgroup *cg);

/* Whether a pids cgroup can be made here (creates and removes one). */
int sandbox_cgroup_probe(void);

/* Remove the cgroups that goald processes made for their commands and
 * left behind: those whose maker is gone (a job killed with SIGKILL
 * cannot remove its own).  What is still running in them is killed first.
 * Returns how many were removed.  The daemon calls it at start and when a
 * job ends; sandbox_run() once per process, before its first cgroup. */
int sandbox_cgroup_sweep(void);

#endif
