#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gates/cases_int.h"
#include "gates/gates.h"
#include "sandbox/sandbox.h"
#include "sandbox/spill.h"
#include "store/event.h"
#include "store/gate_result.h"
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/log.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

#define GATE_SPILL_MAX ((size_t)64 << 20)

void gates_plan_release(struct gate_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->gates[i].name);
        free(p->gates[i].type);
        free(p->gates[i].command);
        free(p->gates[i].report);
        for (size_t k = 0; k < p->gates[i].n_build_dirs; k++)
            free(p->gates[i].build_dirs[k]);
    }
    free(p->gates);
    p->gates = NULL;
    p->n = 0;
}

int gates_plan_parse(struct gate_plan *out, const char *json)
{
    cJSON *arr = json ? cJSON_Parse(json) : cJSON_CreateArray();
    const cJSON *g;
    size_t i = 0;

    memset(out, 0, sizeof(*out));
    if (!cJSON_IsArray(arr)) {
        cJSON_Delete(arr);
        return err_set(ERR_INVALID, "verification: expected an array of gates");
    }
    out->gates = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*out->gates));
    cJSON_ArrayForEach(g, arr)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name");
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(g, "command");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(g, "type");
        const cJSON *mp = cJSON_GetObjectItemCaseSensitive(g, "must_pass");
        const cJSON *to = cJSON_GetObjectItemCaseSensitive(g, "timeout_s");
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(g, "report");
        const cJSON *bd = cJSON_GetObjectItemCaseSensitive(g, "build_dirs"), *d;
        struct gate_spec *s = &out->gates[i];
        char why[512];

        /* a result holds the name in 128 bytes: cut, two gates would be one */
        if (!cJSON_IsString(name) || !cJSON_IsString(cmd) ||
            strlen(name->valuestring) >= sizeof(((struct gate_result *)0)->name)) {
            gates_plan_release(out);
            cJSON_Delete(arr);
            return err_set(ERR_INVALID,
                           "verification[%zu]: needs a name (at most 127 bytes) and a command", i);
        }
        if (gates_build_dirs_check(bd, why, sizeof(why), NULL) != 0) {
            gates_plan_release(out);
            cJSON_Delete(arr);
            return err_set(ERR_INVALID, "verification[%zu].build_dirs%s%s", i,
                           why[0] == '[' ? "" : ": ", why);
        }
        cJSON_ArrayForEach(d, bd)
            s->build_dirs[s->n_build_dirs++] = xstrdup(d->valuestring);
        s->name = xstrdup(name->valuestring);
        s->command = xstrdup(cmd->valuestring);
        s->type = xstrdup(cJSON_IsString(type) ? type->valuestring : "custom");
        s->report = cJSON_IsString(rep) ? xstrdup(rep->valuestring) : NULL;
        s->must_pass = mp ? cJSON_IsTrue(mp) : 1;
        s->timeout_s = cJSON_IsNumber(to) ? (int)to->valuedouble : 0;
        out->n = ++i;
    }
    cJSON_Delete(arr);
    return 0;
}

void gate_result_release(struct gate_result *r)
{
    free(r->command);
    free(r->output_tail);
    test_cases_release(&r->cases);
    memset(r, 0, sizeof(*r));
}

int gates_run(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
              struct gate_result *out)
{
    return gates_run_at(ctx, g, root, NULL, out);
}

/* A temporary file for the gate's output under goald's state folder
 * (tools.spill_total_mb), not the host's TMPDIR: its path into spill. */
static int spill_open(const struct gates_ctx *ctx, const struct gate_spec *g, char *spill,
                      size_t n)
{
    char dir[4096];
    int fd, rc;

    if ((rc = sandbox_spill_prepare(ctx ? ctx->st : NULL, NULL, GATE_SPILL_MAX, dir,
                                    sizeof(dir))) != 0)
        return err_wrap(rc, "gate %s: the spill folder", g->name);
    if ((size_t)snprintf(spill, n, "%s/gate-XXXXXX", dir) >= n)
        return err_set(ERR_INVALID, "gate %s: the spill folder's path is too long", g->name);
    fd = mkstemp(spill);
    if (fd < 0)
        return err_set(ERR_IO, "gate %s: cannot make a temporary file", g->name);
    close(fd);
    return 0;
}

/* Run g's command in the sandbox, its output spilled to spill. */
static int sandbox_gate(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
                        const char *root_src, const char *spill, struct sandbox_result *res)
{
    struct sandbox_spec spec;
    const char *env[4];
    char *cmd = gates_instrument(g, env, sizeof(env) / sizeof(env[0]));
    int rc;

    memset(&spec, 0, sizeof(spec));
    spec.root = root;
    spec.root_src = root_src;
    spec.command = cmd ? cmd : g->command;
    spec.env = env;
    spec.timeout_ms = (g->timeout_s > 0 ? g->timeout_s : (int)config_int(CFG_LANE_WORK_TIMEOUT_S)) *
                      1000;
    spec.merge_stderr = 1;
    spec.spill_path = spill;
    spec.spill_max = GATE_SPILL_MAX;
    if (ctx) {
        spec.st = ctx->st;
        spec.goal_id = ctx->goal_id;
        spec.item_id = ctx->item_id;
        spec.run_id = ctx->run_id;
        spec.git_common = ctx->git_common;
        spec.git_dir = ctx->git_dir;
    }
    rc = sandbox_run(&spec, res);
    free(cmd);
    return rc;
}

/* The last GATES_TAIL bytes of red, from a character boundary: what the
 * record and the next attempt show.  pytest: without the "PASSED id"
 * lines of the short summary (-rA, added for the per-test record, would
 * push the failures' own report out of the tail). */
static char *tail_of(const strbuf *red, int drop_passed)
{
    strbuf kept;
    const char *s = strbuf_cstr(red), *e = s + red->len;
    char *out;

    if (!drop_passed)
        return xstrdup(s + utf8_cut_forward(s, red->len > GATES_TAIL ? red->len - GATES_TAIL : 0,
                                            red->len));
    strbuf_init(&kept, red->len + 1);
    for (const char *p = s; p < e;) {
        const char *nl = memchr(p, '\n', (size_t)(e - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(e - p);
        if (strncmp(p, "PASSED ", 7) != 0 && strbuf_add(&kept, p, n) != 0)
            abort(); /* at most red's length: the cap holds it */
        p += n;
    }
    out = xstrdup(strbuf_cstr(&kept) + utf8_cut_forward(strbuf_cstr(&kept), kept.len > GATES_TAIL ? kept.len - GATES_TAIL
                                                                                 : 0,
                                              kept.len));
    strbuf_release(&kept);
    return out;
}

/* From the redacted output red: its hash, the test cases (from the report
 * file, read under the path policy beneath files: the gate wrote it, or
 * the output), counts from them (else from summary lines), and the tail. */
static int output_judge(struct gate_result *out, const struct gate_spec *g, const char *files,
                        const strbuf *red)
{
    struct test_counts summary;
    int rc;

    hash_sha256_hex(out->output_hash, strbuf_cstr(red), red->len);
    if ((rc = gates_parse_cases(&out->cases, strbuf_cstr(red), red->len, files, g->report,
                                out->note, sizeof(out->note))) != 0)
        return err_wrap(rc, "gate %s", g->name);
    gates_parse_counts(&summary, strbuf_cstr(red), red->len);
    if (out->cases.format)
        gates_counts_from_cases(&out->counts, &out->cases);
    else
        out->counts = summary;
    /* the runner's own summary names more tests than its output did
     * (pytest -q lists only failures): its counts are the truth, and the
     * list of cases is known to be partial */
    if (out->cases.format && summary.format &&
        (summary.passed > out->counts.passed || summary.failed > out->counts.failed)) {
        out->counts = summary;
        out->cases.incomplete = 1;
    }
    if (out->cases.truncated && !out->note[0])
        /* truncation: ok, a note */
        snprintf(out->note, sizeof(out->note), "more than %d test cases: the rest were not read",
                 GATES_CASES_MAX);
    out->output_tail = tail_of(red, out->cases.format && !strcmp(out->cases.format, "pytest"));
    return 0;
}

/* The output made valid UTF-8 in place, each invalid byte replaced by
 * U+FFFD and a last line saying how many were: what a gate prints is
 * stored (its tail, its test cases) on either backend. */
static void valid_text(strbuf *out)
{
    strbuf clean = STRBUF_INIT;
    size_t bad = utf8_invalid_count(strbuf_cstr(out), out->len);

    if (bad == 0)
        return;
    strbuf_init(&clean, out->len * 3 + 128);
    if (utf8_sanitize(&clean, strbuf_cstr(out), out->len, NULL) != 0 ||
        strbuf_addf(&clean, "%s[goald: %zu invalid UTF-8 byte%s replaced]\n",
                    clean.len && clean.buf[clean.len - 1] != '\n' ? "\n" : "", bad,
                    bad == 1 ? "" : "s") != 0)
        abort(); /* a broken invariant: the cap above holds every replacement */
    strbuf_release(out);
    *out = clean;
}

/* The gate.completed event of out. */
static void gate_event(const struct gates_ctx *ctx, const struct gate_spec *g,
                       const struct gate_result *out)
{
    cJSON *p = cJSON_CreateObject();

    cJSON_AddStringToObject(p, "gate", g->name);
    cJSON_AddStringToObject(p, "type", g->type);
    cJSON_AddBoolToObject(p, "passed", out->passed);
    cJSON_AddNumberToObject(p, "exit_code", out->exit_code);
    cJSON_AddBoolToObject(p, "timed_out", out->timed_out);
    cJSON_AddNumberToObject(p, "duration_ms", (double)out->duration_ms);
    cJSON_AddStringToObject(p, "output_hash", out->output_hash);
    if (out->counts.format) {
        cJSON_AddStringToObject(p, "tests_format", out->counts.format);
        cJSON_AddNumberToObject(p, "tests_passed", out->counts.passed);
        cJSON_AddNumberToObject(p, "tests_failed", out->counts.failed);
    }
    if (out->note[0])
        cJSON_AddStringToObject(p, "note", out->note);
    /* the gate's row is its record (gate_results); the event may be lost */
    if (store_event_add(ctx->st, ctx->goal_id, ctx->item_id, ctx->run_id, "gate.completed", p,
                        NULL) != 0)
        log_warn("gate %s: event gate.completed not written: %s", out->name, err_last());
    cJSON_Delete(p);
}

int gates_run_at(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
                 const char *root_src, struct gate_result *out)
{
    struct sandbox_result res;
    char spill[4096 + 16];
    strbuf full, red;
    int rc;

    memset(out, 0, sizeof(*out));
    /* truncation: ok, gates_plan_parse holds names under 128 bytes */
    snprintf(out->name, sizeof(out->name), "%s", g->name);
    /* truncation: ok, a gate type, at most 9 bytes */
    snprintf(out->type, sizeof(out->type), "%s", g->type);
    out->command = xstrdup(g->command);
    out->must_pass = g->must_pass;
    if ((rc = spill_open(ctx, g, spill, sizeof(spill))) != 0)
        return rc;
    if ((rc = sandbox_gate(ctx, g, root, root_src, spill, &res)) != 0) {
        unlink(spill);
        return err_wrap(rc, "gate %s", g->name);
    }
    out->exit_code = res.exit_code;
    out->timed_out = res.timed_out;
    out->duration_ms = res.duration_ms;
    out->passed = res.exit_code == 0 && !res.timed_out;

    /* the whole output when it fit the spill, else the kept tail */
    strbuf_init(&full, GATE_SPILL_MAX + 1);
    if (!res.spilled || fs_read_file(&full, spill, GATE_SPILL_MAX) != 0) {
        strbuf_reset(&full);
        strbuf_add_cut(&full, res.out.data ? res.out.data : "", res.out.len); /* a tail */
    }
    unlink(spill);
    valid_text(&full);
    /* room for the redactions of what may be three times the spill (each
     * invalid byte replaced by three) */
    strbuf_init(&red, (full.len > GATE_SPILL_MAX ? full.len : GATE_SPILL_MAX) * 2);
    redact_text(&red, strbuf_cstr(&full), full.len, NULL);
    rc = output_judge(out, g, root_src ? root_src : root, &red);
    strbuf_release(&red);
    strbuf_release(&full);
    sandbox_result_release(&res);
    if (rc == 0 && ctx && ctx->st)
        gate_event(ctx, g, out);
    return rc;
}

static const char *const status_names[] = {"pass", "fail", "skip"};

/* The cases of r into gate_cases: failures first, then passes, then skips,
 * at most GATES_CASES_STORED rows; *cut receives how many were left out. */
static int store_cases(store *st, int64_t id, const struct test_cases *c, size_t *cut)
{
    static const enum test_status order[] = {TEST_FAIL, TEST_PASS, TEST_SKIP};
    size_t stored = 0;
    int rc = 0;

    *cut = 0;
    for (size_t o = 0; o < 3 && !rc; o++) {
        for (size_t i = 0; i < c->n && !rc; i++) {
            if (c->v[i].status != order[o])
                continue;
            if (stored >= GATES_CASES_STORED) {
                (*cut)++;
                continue;
            }
            rc = store_gate_case_insert(st, id, c->v[i].id, status_names[c->v[i].status],
                                        c->v[i].file);
            stored++;
        }
    }
    return rc;
}

/* r as a gate_results row of ctx's goal, item and run (borrowed). */
static void gate_row(struct store_gate_row *row, const struct gates_ctx *ctx,
                     const struct gate_result *r, const char *tree_id)
{
    memset(row, 0, sizeof(*row));
    row->goal_id = ctx->goal_id;
    row->item_id = ctx->item_id;
    row->run_id = ctx->run_id;
    row->name = r->name;
    row->type = r->type;
    row->command = r->command;
    row->must_pass = r->must_pass;
    row->passed = r->passed;
    row->exit_code = r->exit_code;
    row->duration_ms = r->duration_ms;
    row->output_tail = r->output_tail;
    row->output_hash = r->output_hash;
    row->tree_id = tree_id;
    row->classification = r->classification[0] ? r->classification : NULL;
    row->tests_passed = r->counts.passed;
    row->tests_failed = r->counts.failed;
    row->tests_skipped = r->counts.skipped;
    row->tests_total = r->counts.total;
    row->tests_format = r->cases.format ? r->cases.format : r->counts.format;
    row->note = r->note[0] ? r->note : NULL;
}

int gates_store(const struct gates_ctx *ctx, const struct gate_result *r, const char *tree_id,
                int64_t *id_out)
{
    struct store_gate_row row;
    int64_t id = 0;
    size_t cut = 0;
    int rc;

    if ((rc = store_tx_begin(ctx->st)) != 0)
        return rc;
    gate_row(&row, ctx, r, tree_id);
    if ((rc = store_gate_result_insert(ctx->st, &row, &id)) != 0 ||
        (rc = store_cases(ctx->st, id, &r->cases, &cut)) != 0)
        goto out;
    if (cut) {
        char note[sizeof(r->note) + 128];
        /* truncation: ok, a note */
        snprintf(note, sizeof(note), "%s%s%zu of %zu test cases stored (failures first)",
                 r->note, r->note[0] ? "; " : "", r->cases.n - cut, r->cases.n);
        rc = store_gate_result_set_note(ctx->st, id, note);
    }
out:
    if (rc) {
        store_tx_rollback(ctx->st);
        return rc;
    }
    if ((rc = store_tx_commit(ctx->st)) != 0)
        return rc;
    if (id_out)
        *id_out = id;
    return 0;
}

/* A stored case into the builder of gates_cases_load(). */
static int case_loaded(const char *name, const char *stat, const char *file, void *arg)
{
    enum test_status ts = !strcmp(stat, "fail")   ? TEST_FAIL
                          : !strcmp(stat, "skip") ? TEST_SKIP
                                                  : TEST_PASS;

    return cb_add(arg, name, strlen(name), ts, file, file ? strlen(file) : 0);
}

int gates_cases_load(store *st, int64_t gate_result_id, struct test_cases *out)
{
    struct case_builder b;
    const char *format = NULL;
    char *stored = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = store_gate_result_format(st, gate_result_id, &stored)) != 0)
        return rc;
    format = gates_format_intern(stored);
    free(stored);
    cb_init(&b, out);
    rc = store_gate_cases_each(st, gate_result_id, case_loaded, &b);
    cb_release(&b);
    if (!rc && out->n)
        out->format = format;
    if (rc)
        test_cases_release(out);
    return rc;
}
