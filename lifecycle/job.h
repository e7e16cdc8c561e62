/*
 * job.h - running one claimed unit of work (a run) in this process:
 * `goald job RUN_ID`.  The daemon spawns one process per job; tests call
 * it directly.
 *
 * A job loads its claim, marks the run as its own (pid, lease), runs the
 * stage (elaborate, plan or execute), and leaves the run in a terminal
 * state: success, or failed with an error class, a signature and a reason,
 * after which recovery decides what happens to the goal or item.
 */
#ifndef GOALD_LIFECYCLE_JOB_H
#define GOALD_LIFECYCLE_JOB_H

#include <stdint.h>

#include "lifecycle/claim.h"
#include "lifecycle/control.h"
#include "lifecycle/goal_view.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/store.h"
#include "util/strbuf.h"

struct llm_client;
struct cJSON;

/* What the stage functions share.  Owned by job_run(). */
struct job_ctx {
    store *st;
    struct llm_client *llm;
    struct claim claim;
    struct goal *goal;
    struct work_item *item; /* execute only */
    /* the goal's success criteria and elaboration, parsed once when the
     * run starts (goal_view.h); never NULL, owned by job_run() */
    const struct criteria *criteria;
    const struct elaboration *elab;
    /* where the goal's code is on this node (workspace_locate()): the
     * repository its worktrees are made from and the worktree folder
     * (NULL without a repository; worktree NULL before the first run);
     * clone is 1 in clone mode (docs/scaling.md).  Owned by job_run(). */
    char *repo;
    char *worktree;
    int clone;
    int model_index; /* chain position for the next call */
    struct run_usage usage;
    int64_t last_call_tokens; /* estimate of the next call, for budget checks */
    double last_call_cost;
    /* the outcome of a failed stage */
    char error_class[32];
    strbuf failure; /* the reason, redacted */
    strbuf summary; /* the stage's summary, stored on the run */
    /* > 0: a server said when to come back (a forge's rate limit reset,
     * ms since the epoch): a goal-level retry waits at least until then */
    int64_t retry_not_before_ms;
    /* 1: a human accepted this attempt's test changes (execute.c,
     * accept_best_attempt): a "tests weakened" verdict does not fail it */
    int accept_weakened;
};

/* The result of a run, for the caller (CLI, daemon). */
struct job_outcome {
    char status[16];      /* success, failed */
    char error_class[32]; /* "" on success */
    char next[32];        /* what recovery did: "", retry, failover, plan_b, escalated, skipped */
};

/* job_run(), which runs one unit, is the lifecycle table's: stages.h. */

/* For stages: record a failure of class cls with a formatted reason;
 * returns ERR_FAIL. */
int job_fail(struct job_ctx *j, const char *cls, const char *fmt, ...) GOALD_PRINTF(3, 4);

/* For stages: an event of j's goal (and of its item and run when it has
 * them) that the job can go on without; payload (may be NULL) is
 * borrowed.  A failed write is logged with the event type. */
void job_event_or_warn(struct job_ctx *j, const char *type, const struct cJSON *payload);

/* For stages: one model call that answers a JSON object (stage S with its
 * system prompt and schema, the user text), with the run limits and the
 * goal budget checked first.  *answer is the parsed object (cJSON_Delete).
 * On failure job_fail() has been called. */
int job_ask_json(struct job_ctx *j, const char *stage, const char *system, const char *user,
                 const char *schema, struct cJSON **answer);

/* job_ask_json() for a call the run can do without (the condense step of
 * compaction): the same checks, lease, breakers and accounting, but a
 * failure does not fail the run: it returns non-zero with the message in
 * the error slot and *cls (may be NULL) set to its class ("budget",
 * "limit", a model error class; NULL when the job is no longer live). */
int job_try_json(struct job_ctx *j, const char *stage, const char *system, const char *user,
                 const char *schema, struct cJSON **answer, const char **cls);

/* Renew the run's lease (now + its timeout + 30 s): a job does it before
 * every model call, so that a lease only expires when the job is gone or
 * hung. */
int job_renew_lease(struct job_ctx *j);

/* Before every model call: is the run still ours to go on with?  0 when
 * the run was not aborted (cancel, lease, timeout) and its goal is
 * neither cancelled nor completed; else
 * ERR_FAIL after job_fail() with class "cancelled" (the job then stops
 * without writing the run's end: `goald cancel` wrote it). */
int job_check_live(struct job_ctx *j);

/* After a failed model call of class cls with message msg: count it
 * towards cls's breaker; a credential error (auth) opens it at once and
 * until the configuration changes (breaker_trip()). */
void job_breaker_failed(struct job_ctx *j, const char *cls, const char *msg);

/* Is pid a live `goald ... job RUN_ID` process of run_id?  (A pid alone
 * may have been reused since; a zombie has no command line.) */
int job_process_is(long pid, const char *run_id);

/* Normalise an error text (paths, numbers, hex ids stripped) and hash it:
 * the error signature of a failed run. */
void job_error_signature(char out[65], const char *cls, const char *text);

#endif
