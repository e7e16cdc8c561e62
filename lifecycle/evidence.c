/*
 * evidence.c - the evidence of each success criterion an item serves.
 *
 * One "evidence" decision per (criterion, item that serves it), with a
 * kind, decided top to bottom (first match wins):
 *   - a criterion about new tests that fail before the change ("new
 *     regression tests fail on the original code"): `test` when the item
 *     has fail_to_pass cases (verify_pins.c), else `unchecked`, saying so;
 *   - `test`: passing test cases the criterion names, or the item's
 *     fail_to_pass or fixed cases that share a word with it;
 *   - `gate`: a passing gate the criterion names, or one whose name,
 *     command or test cases share a word with it (a gate that cannot see
 *     the criterion is never cited: "CHANGELOG.rst has a new entry" is not
 *     backed by pytest);
 *   - `review`: a finding of this item's review that shares a word with
 *     it, quoted;
 *   - `claimed`: only the model's summary speaks of it;
 *   - `unchecked`: nothing does.
 * A word here is a run of letters and digits of three or more, not one of
 * the common words below, compared without case and a final "s".
 */
#include "lifecycle/evidence.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lifecycle/goal_view.h"
#include "lifecycle/job.h"
#include "lifecycle/plan.h"
#include "lifecycle/verify_state.h"
#include "store/escalation.h"
#include "store/item.h"
#include "util/strbuf.h"
#include "util/utf8.h"
#include "util/xalloc.h"

/* Words too common to tie a criterion to a gate, a case or a note. */
static const char *const common_words[] = {
    "the",    "and",   "for",    "with",   "has",     "have",  "new",   "test",    "tests",
    "pass",   "passes", "passed", "passing", "fail",  "fails", "failing", "failed", "must",
    "should", "all",   "its",    "that",   "this",    "when",  "not",   "from",    "are",
    "was",    "were",  "can",    "will",   "into",    "each",  "any",   "one",     "code",
    "file",   "files", "run",    "runs",   "work",    "works", "still", "now",     "only",
    "does",   "use",   "uses",   "used",   "add",     "adds",  "added", "exists",  "exist",
    "py",     NULL};

/* The word at s of length n, lowercased without a final "s", into w. */
static void word_norm(char *w, size_t size, const char *s, size_t n)
{
    size_t k = 0;

    for (; k < n && k + 1 < size; k++)
        w[k] = (char)tolower((unsigned char)s[k]);
    if (k > 3 && w[k - 1] == 's')
        k--;
    w[k] = '\0';
}

static int is_common(const char *s, size_t n)
{
    for (const char *const *c = common_words; *c; c++)
        if (strlen(*c) == n && !strncasecmp(*c, s, n))
            return 1;
    return 0;
}

/* Does the normalised word w occur as a word of hay? */
static int hay_has(const char *hay, const char *w)
{
    char h[64];

    for (const char *p = hay; p && *p;) {
        size_t n = 0;
        while (isalnum((unsigned char)p[n]))
            n++;
        if (n > 0) {
            word_norm(h, sizeof(h), p, n);
            if (!strcmp(h, w))
                return 1;
        }
        p += n ? n : 1;
    }
    return 0;
}

/* Do the criterion and hay share a word that is not a common one? */
static int shares_word(const char *crit, const char *hay)
{
    char w[64];

    if (!crit || !hay)
        return 0;
    for (const char *p = crit; *p;) {
        size_t n = 0;
        while (isalnum((unsigned char)p[n]))
            n++;
        if (n >= 3 && n < sizeof(w) && !is_common(p, n)) {
            word_norm(w, sizeof(w), p, n);
            if (hay_has(hay, w))
                return 1;
        }
        p += n ? n : 1;
    }
    return 0;
}

/* Is the criterion about new tests failing before the change? */
static int about_new_tests(const char *t)
{
    int tests = verify_word_in(t, "test") || verify_word_in(t, "tests") ||
                verify_word_in(t, "regression");

    return tests && (verify_word_in(t, "new") || verify_word_in(t, "regression") ||
                     verify_word_in(t, "original") || verify_word_in(t, "before") ||
                     verify_word_in(t, "added") || verify_word_in(t, "old"));
}

/* Is the criterion only that the gates pass ("the gate passes", "all
 * tests pass", "existing tests still pass", "the test suite is green")?
 * Every word is one of a few, with a word for the tests or gates and one
 * for passing. */
static int about_all_gates(const char *t)
{
    static const char *const ok[] = {
        "the",   "all",    "every", "tests",  "test",     "gate",  "gates",   "suite",
        "unit",  "checks", "check", "ci",     "existing", "still", "must",    "should",
        "is",    "are",    "and",   "pass",   "passes",   "passing", "green", "succeed",
        "succeeds", "ok",  NULL};
    int subject = 0, passing = 0;

    for (const char *p = t ? t : ""; *p;) {
        size_t n = 0;
        int known = 0;
        while (isalnum((unsigned char)p[n]))
            n++;
        for (int k = 0; n && ok[k]; k++)
            if (strlen(ok[k]) == n && !strncasecmp(ok[k], p, n)) {
                known = 1;
                subject |= k >= 3 && k <= 11;
                passing |= k >= 19;
            }
        if (n && !known)
            return 0;
        p += n ? n : 1;
    }
    return subject && passing;
}

/* Does the criterion name the case id (whole, or its last part after
 * "::", "." or "/")? */
static int names_case(const char *t, const char *id)
{
    const char *last = id;

    for (const char *p = id; *p; p++)
        if (*p == ':' || *p == '.' || *p == '/')
            last = p + 1;
    return verify_word_in(t, id) || (last != id && strlen(last) >= 4 && verify_word_in(t, last));
}

/* Did gate i pass (a flaky one on its re-run), also on the product-only
 * tree when there was one? */
static int gate_passed(const struct verify_state *vs, size_t i)
{
    const struct gate_eval *e = &vs->ev[i];
    int pass = e->r.passed || !strcmp(e->r.classification, "flaky");

    if (vs->wev && !(vs->wev[i].r.passed || !strcmp(vs->wev[i].r.classification, "flaky") ||
                     vs->wev[i].pinned_only))
        pass = 0;
    return pass;
}

/* Does gate i see the criterion: its name, command or a case shares a
 * word with it? */
static int gate_sees(const struct verify_state *vs, size_t i, const char *t)
{
    const struct gate_result *r = &vs->ev[i].r;

    if (shares_word(t, r->name) || shares_word(t, vs->plan.gates[i].command))
        return 1;
    for (size_t k = 0; k < r->cases.n; k++)
        if (shares_word(t, r->cases.v[k].id))
            return 1;
    return 0;
}

static void add_unique(cJSON *a, const char *s)
{
    const cJSON *x;

    cJSON_ArrayForEach(x, a) if (!strcmp(cJSON_GetStringValue(x), s)) return;
    cJSON_AddItemToArray(a, cJSON_CreateString(s));
}

/* The gate records (for the PR) into gs, and every fail_to_pass case of
 * the item into ftp. */
static void gate_records(const struct verify_state *vs, cJSON *gs, cJSON *ftp)
{
    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_eval *e = &vs->ev[i];
        cJSON *g = cJSON_CreateObject();
        cJSON_AddStringToObject(g, "gate", e->r.name);
        cJSON_AddNumberToObject(g, "exit_code", e->r.exit_code);
        cJSON_AddBoolToObject(g, "passed", e->r.passed);
        cJSON_AddStringToObject(g, "classification", e->r.classification);
        cJSON_AddStringToObject(g, "granularity", e->diff.granularity);
        cJSON_AddStringToObject(g, "output_hash", e->r.output_hash);
        cJSON_AddStringToObject(g, "tree_id", vs->tree);
        cJSON_AddItemToArray(gs, g);
        for (size_t k = 0; vs->pins && k < vs->pins[i].n_fail_to_pass; k++)
            add_unique(ftp, vs->pins[i].fail_to_pass[k]);
    }
}

/* The test cases that back criterion t into tests: passing cases it
 * names, fail_to_pass and fixed cases that share a word with it (a case
 * that passed backs it even when another case of its gate failed). */
static void test_backing(const struct verify_state *vs, const char *t, const cJSON *ftp,
                         cJSON *tests)
{
    const cJSON *x;

    for (size_t i = 0; i < vs->plan.n; i++) {
        const struct gate_eval *e = &vs->ev[i];
        for (size_t k = 0; k < e->r.cases.n; k++)
            if (e->r.cases.v[k].status == TEST_PASS && names_case(t, e->r.cases.v[k].id))
                add_unique(tests, e->r.cases.v[k].id);
        for (size_t k = 0; k < e->diff.n_fixed; k++)
            if (names_case(t, e->diff.fixed[k]) || shares_word(t, e->diff.fixed[k]))
                add_unique(tests, e->diff.fixed[k]);
    }
    cJSON_ArrayForEach(x, ftp)
    {
        if (names_case(t, x->valuestring) || shares_word(t, x->valuestring))
            add_unique(tests, x->valuestring);
    }
}

/* Does criterion t name gate i: its name as a word, or its whole
 * command? */
static int gate_named(const struct verify_state *vs, size_t i, const char *t)
{
    const char *cmd = vs->plan.gates[i].command;

    return verify_word_in(t, vs->ev[i].r.name) || (cmd && strlen(cmd) >= 3 && strcasestr(t, cmd)) ||
           (about_all_gates(t) && vs->plan.gates[i].must_pass);
}

/* The passing gates that back criterion t into backed: those it names,
 * else those that see it. */
static void gate_backing(const struct verify_state *vs, const char *t, cJSON *backed)
{
    int named = 0;

    for (size_t i = 0; i < vs->plan.n; i++)
        named += gate_named(vs, i, t);
    for (size_t i = 0; i < vs->plan.n; i++)
        if (gate_passed(vs, i) && (named ? gate_named(vs, i, t) : gate_sees(vs, i, t)))
            cJSON_AddItemToArray(backed, cJSON_CreateString(vs->ev[i].r.name));
}

/* A review finding of this item that speaks of the criterion. */
struct review_find {
    const char *item_key, *text;
    char *quote; /* malloc'd: the last such finding, quoted */
};

static int review_cb(const struct store_decision *d, void *ctx)
{
    struct review_find *rf = ctx;

    if (strcmp(d->kind, "review_finding") != 0 || !d->item_key ||
        strcmp(d->item_key, rf->item_key) != 0 || !shares_word(rf->text, d->note))
        return 0;
    free(rf->quote);
    rf->quote = NULL;
    {
        char *note = utf8_cap_dup(d->note, strlen(d->note), 400);
        strbuf q;
        strbuf_init(&q, 1024);
        strbuf_addf_cut(&q, "review (%s, %s): \"%s\"", d->aspect ? d->aspect : "",
                        d->severity ? d->severity : "", note);
        rf->quote = xstrdup(strbuf_cstr(&q));
        strbuf_release(&q);
        free(note);
    }
    return 0;
}

/* The kind of criterion t and what backs it (kind, backing into e). */
static void decide(struct job_ctx *j, const char *t, const char *summary, const cJSON *ftp,
                   const cJSON *tests, const cJSON *backed, cJSON *e)
{
    struct review_find rf = {j->item->key, t, NULL};
    strbuf b;

    strbuf_init(&b, 4096); /* what backs it: cut at its cap */
    if (about_new_tests(t)) {
        const cJSON *x;
        int k = 0;
        if (cJSON_GetArraySize(ftp) == 0) {
            cJSON_AddStringToObject(e, "kind", "unchecked");
            cJSON_AddStringToObject(e, "backing",
                                    "no new test of this item fails on the original code and "
                                    "passes on the item's (no fail_to_pass case)");
            goto out;
        }
        cJSON_AddStringToObject(e, "kind", "test");
        strbuf_adds_cut(&b, "fail_to_pass: ");
        cJSON_ArrayForEach(x, ftp) strbuf_addf_cut(&b, "%s%s", k++ ? ", " : "", x->valuestring);
        cJSON_AddStringToObject(e, "backing", strbuf_cstr(&b));
        goto out;
    }
    if (cJSON_GetArraySize(tests) > 0) {
        const cJSON *x;
        int k = 0;
        cJSON_AddStringToObject(e, "kind", "test");
        strbuf_adds_cut(&b, "test cases passed: ");
        cJSON_ArrayForEach(x, tests) strbuf_addf_cut(&b, "%s%s", k++ ? ", " : "", x->valuestring);
    } else if (cJSON_GetArraySize(backed) > 0) {
        const cJSON *x;
        int k = 0;
        cJSON_AddStringToObject(e, "kind", "gate");
        strbuf_adds_cut(&b, "gates passed: ");
        cJSON_ArrayForEach(x, backed) strbuf_addf_cut(&b, "%s%s", k++ ? ", " : "", x->valuestring);
    } else if (store_decision_each_review(j->st, j->goal->id, review_cb, &rf) == 0 && rf.quote) {
        cJSON_AddStringToObject(e, "kind", "review");
        strbuf_adds_cut(&b, rf.quote);
    } else if (shares_word(t, summary)) {
        char *s = utf8_cap_dup(summary, strlen(summary), 400);
        cJSON_AddStringToObject(e, "kind", "claimed");
        strbuf_addf_cut(&b, "only the model's summary: \"%s\"", s);
        free(s);
    } else {
        cJSON_AddStringToObject(e, "kind", "unchecked");
        strbuf_adds_cut(&b, "no gate, test case, review finding or summary speaks of it");
    }
    cJSON_AddStringToObject(e, "backing", strbuf_cstr(&b));
out:
    err_clear();
    free(rf.quote);
    strbuf_release(&b);
}

/* The evidence decision of criterion t for this item. */
static int criterion_evidence(struct job_ctx *j, const struct verify_state *vs, const char *t,
                              const char *summary, int verified)
{
    cJSON *e = cJSON_CreateObject(), *gs = cJSON_AddArrayToObject(e, "gates");
    cJSON *ftp = cJSON_CreateArray(), *backed = cJSON_CreateArray(), *tests = cJSON_CreateArray();
    const char *kind;
    int rc;

    cJSON_AddStringToObject(e, "criterion", t);
    cJSON_AddStringToObject(e, "item", j->item->key);
    if (vs->base[0])
        cJSON_AddStringToObject(e, "baseline", vs->base);
    gate_records(vs, gs, ftp);
    test_backing(vs, t, ftp, tests);
    gate_backing(vs, t, backed);
    decide(j, t, summary, ftp, tests, backed, e);
    kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "kind"));
    /* a gate is cited only on a gate row, cases only on a test row */
    if (strcmp(kind, "gate") != 0) {
        cJSON_Delete(backed);
        backed = cJSON_CreateArray();
    }
    if (strcmp(kind, "test") != 0 || about_new_tests(t)) {
        cJSON_Delete(tests);
        tests = strcmp(kind, "test") != 0 ? cJSON_CreateArray() : cJSON_Duplicate(ftp, 1);
    }
    cJSON_AddItemToObject(e, "backed_by", backed);
    cJSON_AddItemToObject(e, "tests", tests);
    cJSON_AddItemToObject(e, "fail_to_pass", ftp);
    cJSON_AddStringToObject(e, "evidence",
                            !strcmp(kind, "gate")   ? "gates"
                            : !strcmp(kind, "test") ? "tests"
                                                    : "none");
    /* a gate the criterion names (not one that only shares a word with
     * it): the goal's evaluation need not ask about it */
    if (!strcmp(kind, "gate")) {
        int named = 0;
        for (size_t i = 0; i < vs->plan.n; i++)
            named |= gate_passed(vs, i) && gate_named(vs, i, t);
        cJSON_AddBoolToObject(e, "gate_named", named);
    }
    cJSON_AddItemToObject(e, "gate_inputs_changed", cJSON_Duplicate(vs->inputs, 1));
    cJSON_AddBoolToObject(e, "unverified", verified == 0);
    rc = verify_decision(j, "evidence", NULL, NULL, t, e);
    cJSON_Delete(e);
    return rc;
}

int evidence_record(struct job_ctx *j, const struct verify_state *vs, const char *summary,
                    int verified)
{
    int rc = 0;

    for (size_t k = 0; k < vs->crit->n; k++)
        if (plan_item_serves(j->item, (int)k) &&
            (rc = criterion_evidence(j, vs, vs->crit->text[k], summary, verified)) != 0)
            return rc;
    return rc;
}
