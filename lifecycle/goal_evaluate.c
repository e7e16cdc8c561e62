/*
 * goal_evaluate.c - the goal-level evaluation (stage `evaluate`): after
 * the final check passed and before anything is pushed.
 *
 * Top to bottom: what each criterion already has (the items' evidence
 * rows: test cases, a gate, or nothing deterministic; which done items
 * serve it and whether one is critical); the question to the model (the
 * goal, the criteria with their deterministic evidence, the done items'
 * summaries, the goal's diff from its starting commit, capped and
 * redacted) for every criterion test cases do not prove; its verdicts
 * (met, unmet, unknown, each with a quote) recorded as an "evaluation"
 * decision; and what follows: an unmet criterion nothing deterministic
 * proves sends the goal back to planning once (replan.c), then escalates
 * (a critical item serves it) or leaves the goal partial.  The verdict
 * never turns a gate: a criterion a gate or a test proves stays proven,
 * and the model is only asked after the gates passed.
 */
#include "lifecycle/goal_evaluate.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "lifecycle/control.h"
#include "lifecycle/escalate.h"
#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/prompts.h"
#include "lifecycle/replan.h"
#include "lifecycle/verify.h"
#include "lifecycle/workspace.h"
#include "llm/llm.h"
#include "store/escalation.h"
#include "store/goal.h"
#include "store/item.h"
#include "store/status.h"
#include "util/err.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"
#include "vcs/diff.h"
#include "vcs/worktree.h"

#define EVAL_DIFF_MAX (160 * 1024)
#define EVAL_QUOTE_MAX 600
#define EVAL_CRITERIA_MAX 64

struct crit {
    const char *text;
    const char *det;   /* "test", "gate" or NULL: what the items' gates prove */
    int named;         /* det is a gate the criterion names (its name or command) */
    char *det_backing; /* what backs det, for the prompt */
    int critical;      /* a critical done item serves it */
    const char *verdict; /* met, unmet, unknown; NULL: not asked or no answer */
    char *quote;
    int asked;
    int unquoted; /* said met, but its quote is not in the diff */
};

struct eval {
    struct job_ctx *j;
    struct crit c[EVAL_CRITERIA_MAX];
    int n;
    strbuf items; /* the done items' summaries, for the prompt */
    char *unavailable; /* why the model gave no verdicts */
    char *diff;        /* the diff the model was shown (redacted), NULL: none */
    int check_quotes;  /* verdicts of this call (not reused ones): quotes checked */
};

static int find_crit(const struct eval *e, const char *text)
{
    for (int k = 0; text && k < e->n; k++)
        if (!strcmp(e->c[k].text, text))
            return k;
    return -1;
}

static int item_cb(const struct work_item *wi, void *ctx)
{
    struct eval *e = ctx;

    if (item_status_of(wi->status) != ITEM_DONE)
        return 0;
    for (int k = 0; k < e->n; k++)
        if (plan_item_serves(wi, k) && wi->critical)
            e->c[k].critical = 1;
    strbuf_addf_cut(&e->items, "- %s %s: %s\n", wi->key, wi->title,
                    wi->summary && *wi->summary ? wi->summary : "(no summary)");
    return 0;
}

/* The strongest deterministic evidence of each criterion: test > gate. */
static int evidence_cb(const struct store_decision *d, void *ctx)
{
    struct eval *e = ctx;
    cJSON *data = d->data ? cJSON_Parse(d->data) : NULL;
    const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "kind"));
    const char *backing = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "backing"));
    int k = find_crit(e, d->note);

    if (k >= 0 && kind && !strcmp(kind, "gate") &&
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(data, "gate_named")))
        e->c[k].named = 1;
    if (k >= 0 && kind && (!strcmp(kind, "test") || !strcmp(kind, "gate")) &&
        !(e->c[k].det && !strcmp(e->c[k].det, "test"))) {
        e->c[k].det = !strcmp(kind, "test") ? "test" : "gate";
        free(e->c[k].det_backing);
        e->c[k].det_backing =
            utf8_cap_dup(backing ? backing : "", backing ? strlen(backing) : 0, 300);
    }
    cJSON_Delete(data);
    return 0;
}

/* The question: the goal, its criteria with what proves them, the done
 * items and the goal's diff from base (40 hex; "" when unknown). */
static void eval_prompt(strbuf *u, struct eval *e, const char *base)
{
    const struct goal *g = e->j->goal;
    strbuf diff;
    int cut = 0, first = 1;
    vcs_worktree *wt = NULL;

    strbuf_addf_cut(u, "Goal: %s\n", g->title);
    if (g->description && *g->description)
        strbuf_addf_cut(u, "Description: %s\n", g->description);
    strbuf_adds_cut(u, "Success criteria:\n");
    for (int k = 0; k < e->n; k++) {
        const struct crit *c = &e->c[k];
        strbuf_addf_cut(u, "%d. %s\n   evidence: %s%s%s\n", k, c->text,
                        c->det ? c->det : "nothing deterministic", c->det ? ": " : "",
                        c->det ? c->det_backing : "");
    }
    strbuf_adds_cut(u, "Judge the criteria with these indexes: ");
    for (int k = 0; k < e->n; k++)
        if (e->c[k].asked) {
            strbuf_addf_cut(u, "%s%d", first ? "" : ", ", k);
            first = 0;
        }
    strbuf_addf_cut(u, "\nItems done (one commit each on the goal's branch):\n%s",
                    strbuf_cstr(&e->items));
    strbuf_init(&diff, EVAL_DIFF_MAX);
    if (!base[0] || !e->j->repo || !e->j->worktree ||
        workspace_goal_open(&wt, e->j) != 0 ||
        vcs_diff_commits(&diff, &cut, wt, base) != 0) {
        strbuf_addf_cut(u, "The goal's diff: not available (%s)\n",
                        base[0] ? err_last() : "no starting commit recorded");
        err_clear();
    } else {
        char *red = redact_str(diff.len ? strbuf_cstr(&diff) : "(empty)", NULL);
        strbuf_addf_cut(u, "The goal's diff (from %.12s to the branch head)%s:\n%s\n", base,
                        cut ? ", cut at 160 KiB: later files are not shown" : "", red);
        free(e->diff);
        e->diff = red; /* a "met" verdict's quote must be in it */
    }
    vcs_worktree_free(wt);
    strbuf_release(&diff);
}

/* Does quote show in the diff as a change?  Its longest line (a diff's
 * "+", "-" or " " and the blanks around it left out) of at least 8 bytes
 * must be part of an added or removed line of the diff: a quote of
 * unchanged context, or of nothing the diff holds, is no quote of the
 * change. */
static int quote_in_diff(const char *diff, const char *quote)
{
    const char *best = NULL;
    size_t best_n = 0;
    char *needle;
    int found = 0;

    for (const char *p = quote ? quote : ""; *p;) {
        size_t n = strcspn(p, "\n");
        const char *a = p, *b = p + n;
        if (a < b && (*a == '+' || *a == '-'))
            a++;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b[-1] == ' ' || b[-1] == '\t' || b[-1] == '\r'))
            b--;
        if ((size_t)(b - a) > best_n)
            best = a, best_n = (size_t)(b - a);
        p += n + (p[n] == '\n');
    }
    if (!diff || best_n < 8)
        return 0;
    needle = xstrndup(best, best_n);
    for (const char *p = diff; *p && !found;) {
        size_t n = strcspn(p, "\n");
        /* a changed line, not a file header ("+++ b/x", "--- a/x") */
        if ((*p == '+' || *p == '-') && !(n >= 3 && (!strncmp(p, "+++", 3) || !strncmp(p, "---", 3))))
            found = memmem(p + 1, n - 1, needle, best_n) != NULL;
        p += n + (p[n] == '\n');
    }
    free(needle);
    return found;
}

/* The verdicts of answer into e (entries for criteria not asked, or
 * repeated, are ignored).  A "met" whose quote is not in the diff is
 * taken as "unknown" (a claim, not a quote). */
static void eval_take(struct eval *e, const cJSON *answer)
{
    const cJSON *a;

    cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(answer, "criteria"))
    {
        const cJSON *ix = cJSON_GetObjectItemCaseSensitive(a, "index");
        const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "verdict"));
        const char *q = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(a, "quote"));
        int k = cJSON_IsNumber(ix) ? ix->valueint : -1;
        if (k < 0 || k >= e->n || !e->c[k].asked || e->c[k].verdict || !v)
            continue;
        e->c[k].verdict = !strcmp(v, "met") ? "met" : !strcmp(v, "unmet") ? "unmet" : "unknown";
        /* without a diff (a goal without a repository: unverified
         * anyway) there is nothing to check a quote against */
        if (!strcmp(e->c[k].verdict, "met") && e->check_quotes && e->diff &&
            !quote_in_diff(e->diff, q)) {
            e->c[k].verdict = "unknown";
            e->c[k].unquoted = 1;
        }
        if (q) {
            char *capped = utf8_cap_dup(q, strlen(q), EVAL_QUOTE_MAX);
            e->c[k].quote = redact_str(capped, NULL);
            free(capped);
        }
    }
}

/* A verdict of the same head recorded before (a publish retried): taken
 * as it was.  1 when there was one. */
static int eval_cached(struct eval *e, const char *head)
{
    cJSON *d = NULL;
    const cJSON *c;
    const char *was;
    int found = 0;

    if (store_decision_latest_of_goal(e->j->st, e->j->goal->id, "evaluation", &d) != 0) {
        err_clear();
        return 0;
    }
    was = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "head"));

    if (d && was && !strcmp(was, head) &&
        cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(d, "answered"))) {
        cJSON *fake = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(fake, "criteria");
        cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d, "criteria"))
        {
            if (cJSON_GetObjectItemCaseSensitive(c, "verdict") &&
                cJSON_IsString(cJSON_GetObjectItemCaseSensitive(c, "verdict")))
                cJSON_AddItemToArray(arr, cJSON_Duplicate(c, 1));
        }
        eval_take(e, fake);
        cJSON_Delete(fake);
        found = 1;
    }
    cJSON_Delete(d);
    return found;
}

/* Ask the model; a call that cannot be made or answered leaves e's
 * verdicts unset with e->unavailable saying why.  0, or an error after
 * job_fail() when the run is no longer live. */
static int eval_ask(struct eval *e, const char *base)
{
    struct job_ctx *j = e->j;
    strbuf u;
    cJSON *answer = NULL;
    const char *cls = NULL;
    int rc = 0;

    if (!j->llm && llm_client_open(&j->llm, j->st) != 0) {
        e->unavailable = xstrdup(err_last());
        err_clear();
        return 0;
    }
    if (control_check_prices(j->goal, j->llm) != 0) {
        e->unavailable = xstrdup(err_last());
        err_clear();
        return 0;
    }
    strbuf_init(&u, 1 << 20);
    eval_prompt(&u, e, base);
    if (job_try_json(j, "evaluate", prompt_evaluate, strbuf_cstr(&u), schema_evaluate, &answer,
                     &cls) != 0) {
        if (!cls) {
            rc = ERR_FAIL; /* no longer live: job_fail() was called */
        } else {
            e->unavailable = xstrdup(err_last());
            err_clear();
        }
    } else {
        e->check_quotes = 1;
        eval_take(e, answer);
        e->check_quotes = 0;
    }
    cJSON_Delete(answer);
    strbuf_release(&u);
    return rc;
}

/* What the criterion stands at: met, unmet or unchecked. */
static const char *crit_status(const struct crit *c)
{
    if (c->det || (c->verdict && !strcmp(c->verdict, "met")))
        return "met";
    if (c->verdict && !strcmp(c->verdict, "unmet"))
        return "unmet";
    return "unchecked";
}

static cJSON *crit_json(const struct eval *e, int k)
{
    const struct crit *c = &e->c[k];
    cJSON *o = cJSON_CreateObject();

    cJSON_AddNumberToObject(o, "index", k);
    cJSON_AddStringToObject(o, "criterion", c->text);
    cJSON_AddStringToObject(o, "status", crit_status(c));
    if (c->det)
        cJSON_AddStringToObject(o, "deterministic", c->det);
    else
        cJSON_AddNullToObject(o, "deterministic");
    cJSON_AddBoolToObject(o, "asked", c->asked);
    if (c->verdict) {
        cJSON_AddStringToObject(o, "verdict", c->verdict);
        cJSON_AddStringToObject(o, "quote", c->quote ? c->quote : "");
    } else {
        cJSON_AddNullToObject(o, "verdict");
    }
    cJSON_AddBoolToObject(o, "critical", c->critical);
    if (c->unquoted)
        cJSON_AddBoolToObject(o, "quote_not_in_diff", 1);
    return o;
}

/* The reasons the goal is partial, one per criterion unmet or unchecked,
 * into out->reasons; out->partial set when there is one. */
static void eval_reasons(struct goal_eval *out, const struct eval *e)
{
    for (int k = 0; k < e->n; k++) {
        const struct crit *c = &e->c[k];
        const char *st = crit_status(c);
        strbuf r;
        if (!strcmp(st, "met"))
            continue;
        strbuf_init(&r, 2048);
        if (!strcmp(st, "unmet"))
            strbuf_addf_cut(&r, "criterion %d \"%s\" is unmet: the evaluation quotes \"%s\"", k,
                            c->text, c->quote ? c->quote : "");
        else if (c->unquoted)
            strbuf_addf_cut(&r, "criterion %d \"%s\" is unchecked: no gate or test proves it, and "
                                "the evaluation's \"met\" quoted no change of the diff",
                            k, c->text);
        else
            strbuf_addf_cut(&r, "criterion %d \"%s\" is unchecked: no gate or test proves it and "
                                "the evaluation %s%s",
                            k, c->text, e->unavailable ? "could not run: " : "could not tell",
                            e->unavailable ? e->unavailable : "");
        cJSON_AddItemToArray(out->reasons, cJSON_CreateString(strbuf_cstr(&r)));
        strbuf_release(&r);
        out->partial = 1;
    }
}

/* The evaluation decision and its event. */
static int eval_record(struct eval *e, const cJSON *reasons, const char *head, const char *base,
                       int cached)
{
    cJSON *d = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(d, "criteria"), *p;
    int met = 0, unmet = 0, unchecked = 0, asked = 0, rc;

    cJSON_AddStringToObject(d, "head", head);
    if (base[0])
        cJSON_AddStringToObject(d, "base", base);
    for (int k = 0; k < e->n; k++) {
        const char *st = crit_status(&e->c[k]);
        cJSON_AddItemToArray(arr, crit_json(e, k));
        met += !strcmp(st, "met");
        unmet += !strcmp(st, "unmet");
        unchecked += !strcmp(st, "unchecked");
        asked += e->c[k].asked;
    }
    cJSON_AddBoolToObject(d, "answered", asked > 0 && !e->unavailable);
    if (e->unavailable)
        cJSON_AddStringToObject(d, "unavailable", e->unavailable);
    if (asked == 0)
        cJSON_AddStringToObject(d, "skipped", "every criterion is proven by test cases or by "
                                              "a passing gate it names");
    cJSON_AddItemToObject(d, "partial_reasons", cJSON_Duplicate(reasons, 1));
    rc = verify_decision(e->j, "evaluation", NULL, NULL, NULL, d);
    p = cJSON_CreateObject();
    cJSON_AddNumberToObject(p, "met", met);
    cJSON_AddNumberToObject(p, "unmet", unmet);
    cJSON_AddNumberToObject(p, "unchecked", unchecked);
    cJSON_AddNumberToObject(p, "asked", asked);
    cJSON_AddBoolToObject(p, "reused", cached);
    if (e->unavailable)
        cJSON_AddStringToObject(p, "unavailable", e->unavailable);
    job_event_or_warn(e->j, "goal.evaluated", p);
    cJSON_Delete(p);
    cJSON_Delete(d);
    return rc ? job_fail(e->j, "internal", "%s", err_last()) : 0;
}

/* An unmet criterion nothing deterministic proves: replan once, then
 * escalate (critical) or stay partial. */
static int eval_follow(struct goal_eval *out, struct eval *e)
{
    int unmet[EVAL_CRITERIA_MAX], n = 0, critical = 0, replanned = 0, rc;
    cJSON *prev = NULL;
    strbuf why;

    for (int k = 0; k < e->n; k++)
        if (!strcmp(crit_status(&e->c[k]), "unmet")) {
            unmet[n++] = k;
            critical |= e->c[k].critical;
        }
    if (n == 0)
        return 0;
    if (store_decision_latest_of_goal(e->j->st, e->j->goal->id, "replanned", &prev) != 0)
        return job_fail(e->j, "internal", "%s", err_last());
    replanned = prev != NULL;
    cJSON_Delete(prev);
    if (!replanned) {
        int planned = 0;
        if ((rc = replan_for_criteria(&planned, e->j, unmet, (size_t)n, out->reasons)) != 0)
            return rc;
        if (planned) {
            out->action = GOAL_EVAL_REPLANNED;
            return 0;
        }
    }
    if (!critical)
        return 0;
    strbuf_init(&why, 4096);
    strbuf_adds_cut(&why, replanned ? "after a follow-up plan, " : "");
    for (int i = 0; i < cJSON_GetArraySize(out->reasons); i++) {
        const char *r = cJSON_GetStringValue(cJSON_GetArrayItem(out->reasons, i));
        if (r && strstr(r, "is unmet"))
            strbuf_addf_cut(&why, "%s%s", why.len && i ? "; " : "", r);
    }
    {
        struct escalate_facts f = {
            .goal = e->j->goal,
            .run_id = e->j->claim.run_id,
            .run_kind = e->j->claim.kind,
            .failure = strbuf_cstr(&why),
        };
        /* the deterministic analysis: the cause is the evaluation's own */
        rc = escalate_open_facts(e->j->st, &f, NULL, "criteria_unmet");
    }
    strbuf_release(&why);
    if (rc != 0)
        return job_fail(e->j, "internal", "%s", err_last());
    out->action = GOAL_EVAL_ESCALATED;
    return 0;
}

static void eval_free(struct eval *e)
{
    for (int k = 0; k < e->n; k++) {
        free(e->c[k].det_backing);
        free(e->c[k].quote);
    }
    free(e->unavailable);
    free(e->diff);
    strbuf_release(&e->items);
}

int goal_evaluate(struct goal_eval *out, struct job_ctx *j, const char *head, int human_partial)
{
    const struct criteria *crit = j->criteria;
    struct eval *e = xcalloc(1, sizeof(*e));
    char base[64] = "";
    int any = 0, cached = 0, rc = 0;

    memset(out, 0, sizeof(*out));
    out->reasons = cJSON_CreateArray();
    e->j = j;
    strbuf_init(&e->items, 32 * 1024);
    for (size_t k = 0; k < crit->n && e->n < EVAL_CRITERIA_MAX; k++)
        e->c[e->n++].text = crit->text[k];
    if (e->n == 0)
        goto out;
    if (store_item_each(j->st, j->goal->id, item_cb, e) != 0 ||
        store_decision_each_evidence(j->st, j->goal->id, evidence_cb, e) != 0) {
        rc = job_fail(j, "internal", "%s", err_last());
        goto out;
    }
    /* proven: by test cases, or by a passing gate the criterion names */
    for (int k = 0; k < e->n; k++)
        any |= e->c[k].asked =
            !(e->c[k].det && (!strcmp(e->c[k].det, "test") || e->c[k].named));
    if (store_decision_first_verification_baseline(j->st, j->goal->id, base, sizeof(base)) != 0)
        err_clear();
    if (any && !(cached = eval_cached(e, head)) && (rc = eval_ask(e, base)) != 0)
        goto out;
    eval_reasons(out, e);
    if ((rc = eval_record(e, out->reasons, head, base, cached)) != 0)
        goto out;
    if (!human_partial)
        rc = eval_follow(out, e);
out:
    eval_free(e);
    free(e);
    return rc;
}

void goal_eval_release(struct goal_eval *e)
{
    cJSON_Delete(e->reasons);
    e->reasons = NULL;
}
