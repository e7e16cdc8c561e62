/*
 * verify_reuse.c - stage 5, verification: a gate runs once per tree.
 *
 * A gate's run is decided by the tree it runs on and by what
 * gates_run_env digests (the gate as configured, the sandbox, the
 * variables passed in).  The first run of a gate on a tree in a goal is
 * recorded in gate_tree_runs and never recorded over, once for goald's
 * own runs (verification, a baseline, the final check) and once for the
 * model's (its run_gates tool).  The two never stand for each other: the
 * model picks when its runs happen and can make new trees at will, so it
 * could run a flaky or clock-dependent gate on tree after tree until one
 * passed first; that pass must not become verification's.
 * When that first run passed at once (not timed out, its test cases
 * complete), a later run of the same gate on the same tree with the same
 * digest in the same goal is that pass, not run again: the result says
 * "reused from run X" (gate_results.note) and a gate.reused event names
 * the run.  A failure is never reused, and a pass that came after a
 * failure on the same tree (a re-run, the model's second try) is never
 * recorded: the first run decides.
 *
 * A warm run (verify_warm.c: a copy of the start's build folders in its
 * copy) is keyed apart, its key naming the warm folder: a warm pass never
 * stands for a cold run.  A cold first run on a tree stands for a warm
 * run as for a cold one (it built from nothing), and a warm run on a tree
 * that has one records nothing of its own.
 *
 * Top to bottom: the key of a gate's run on a tree; the lookup that
 * fills a gate result from a reusable first run (verify_tree_reused); the
 * record of a first run (verify_tree_record).
 */
#include "lifecycle/verify_internal.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gates/gates.h"
#include "lifecycle/job.h"
#include "store/gate_result.h"
#include "util/err.h"
#include "util/hash.h"
#include "util/xalloc.h"

/* The key of g's run keyed by rk in j's goal, warm or cold (warm:
 * rk->warm, else NULL) (env: env_buf, filled: the gate's settings, the
 * folder it runs at, which a command can read — items side by side run
 * in worktrees of their own — for the model's runs, that they are the
 * model's, and for a warm run, the warm folder it had). */
static int tree_key(struct store_gate_tree_run *k, char env_buf[HASH_HEX_SIZE],
                    const struct job_ctx *j, const struct gate_spec *g,
                    const struct verify_run_key *rk, const char *warm)
{
    char base[HASH_HEX_SIZE], mix[2 * HASH_HEX_SIZE + 4200];
    int n;

    gates_run_env(base, g);
    n = snprintf(mix, sizeof(mix), "%s\n%s%s%s%s", base, rk->root ? rk->root : "",
                 rk->by == VERIFY_BY_MODEL ? "\nrun by the model" : "", warm ? "\nwarm:" : "",
                 warm ? warm : "");
    if (n < 0 || n >= (int)sizeof(mix)) /* a cut key could name another run */
        return err_set(ERR_INVALID, "gate %s: its run's key is too long", g->name);
    hash_sha256_hex(env_buf, mix, (size_t)n);
    memset(k, 0, sizeof(*k));
    k->goal_id = j->goal->id;
    k->gate = g->name;
    k->command = g->command;
    k->env = env_buf;
    k->tree_id = rk->tree_id;
    return 0;
}

/* The first run keyed by rk, warm (rk->warm) or cold, into hit (the
 * caller releases it); *found 0 when there is none. */
static int first_run(struct job_ctx *j, const struct gate_spec *g,
                     const struct verify_run_key *rk, const char *warm,
                     struct store_gate_tree_hit *hit, int *found)
{
    struct store_gate_tree_run key;
    char env[HASH_HEX_SIZE];
    int rc;

    *found = 0;
    memset(hit, 0, sizeof(*hit));
    if ((rc = tree_key(&key, env, j, g, rk, warm)) != 0)
        return rc;
    return store_gate_tree_run_get(j->st, &key, hit, found);
}

/* The gate.reused event of g on tree_id, reusing run from. */
static void reused_event(struct job_ctx *j, const struct gate_spec *g, const char *tree_id,
                         const char *from, const struct gate_result *r)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "gate", g->name);
    cJSON_AddStringToObject(p, "tree_id", tree_id);
    cJSON_AddStringToObject(p, "reused_from_run", from);
    cJSON_AddBoolToObject(p, "passed", r->passed);
    cJSON_AddNumberToObject(p, "exit_code", r->exit_code);
    cJSON_AddStringToObject(p, "output_hash", r->output_hash);
    cJSON_AddNumberToObject(p, "cases", (double)r->cases.n);
    job_event_or_warn(j, "gate.reused", p);
    cJSON_Delete(p);
}

int verify_tree_reused(struct job_ctx *j, const struct gate_spec *g,
                       const struct verify_run_key *k, struct gate_result *out,
                       char from[ID_SIZE], int *found)
{
    struct store_gate_tree_hit hit;
    const char *tree_id = k->tree_id;
    int rc;

    *found = 0;
    if (from)
        from[0] = '\0';
    /* cold first: a cold first run on the tree decides a warm run too */
    rc = first_run(j, g, k, NULL, &hit, found);
    if (rc == 0 && !*found && k->warm) {
        store_gate_tree_hit_release(&hit);
        rc = first_run(j, g, k, k->warm, &hit, found);
    }
    if (rc != 0 || !*found) {
        store_gate_tree_hit_release(&hit);
        return rc;
    }
    if (!hit.passed || !hit.reusable) { /* a failure is never reused */
        *found = 0;
        store_gate_tree_hit_release(&hit);
        return 0;
    }
    memset(out, 0, sizeof(*out));
    /* truncation: ok, gates_plan_parse holds names under 128 bytes */
    snprintf(out->name, sizeof(out->name), "%s", g->name);
    /* truncation: ok, a gate type, at most 9 bytes */
    snprintf(out->type, sizeof(out->type), "%s", g->type);
    out->command = xstrdup(g->command);
    /* what the first run printed: the report and the model see it again */
    out->output_tail = xstrdup(hit.output_tail ? hit.output_tail : "");
    out->must_pass = g->must_pass;
    out->passed = 1;
    out->exit_code = hit.exit_code;
    /* truncation: ok, a hash, HASH_HEX_SIZE both */
    snprintf(out->output_hash, sizeof(out->output_hash), "%s", hit.output_hash);
    verify_cases_from_json(&out->cases, hit.format, hit.cases);
    gates_counts_from_cases(&out->counts, &out->cases);
    /* truncation: ok, a note */
    snprintf(out->note, sizeof(out->note), "reused from run %s, its first run on tree %.12s",
             hit.run_id, tree_id);
    if (from)
        snprintf(from, ID_SIZE, "%s", hit.run_id); /* truncation: ok, an id, ID_SIZE both */
    reused_event(j, g, tree_id, hit.run_id, out);
    store_gate_tree_hit_release(&hit);
    return 0;
}

int verify_tree_record(struct job_ctx *j, const struct gate_spec *g,
                       const struct verify_run_key *k, const struct gate_result *r)
{
    struct store_gate_tree_run row;
    struct store_gate_tree_hit hit;
    char env[HASH_HEX_SIZE];
    char *cj;
    int rc, cold = 0;

    /* a warm run on a tree with a cold first run adds nothing: that one decides */
    if (k->warm) {
        rc = first_run(j, g, k, NULL, &hit, &cold);
        store_gate_tree_hit_release(&hit);
        if (rc != 0 || cold)
            return rc;
    }
    if ((rc = tree_key(&row, env, j, g, k, k->warm)) != 0)
        return rc;
    cj = verify_cases_to_json(&r->cases);
    row.run_id = j->claim.run_id;
    row.passed = r->passed;
    /* only a pass that needs nothing more than itself: not timed out,
     * not a re-run (classified), its test cases all named and kept (its
     * counts are theirs, not a runner's summary line), no report file
     * ignored */
    row.reusable = r->passed && !r->timed_out && !r->classification[0] && !r->note[0] &&
                   !r->cases.incomplete && !r->cases.truncated && !r->cases.unnamed_skips &&
                   !(r->counts.format && !r->cases.format);
    row.exit_code = r->exit_code;
    row.duration_ms = r->duration_ms;
    row.format = r->cases.format;
    row.cases = cj;
    row.output_hash = r->output_hash;
    row.output_tail = r->output_tail;
    rc = store_gate_tree_run_put(j->st, &row);
    cJSON_free(cj);
    return rc;
}
