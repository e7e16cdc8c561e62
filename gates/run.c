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
#include "util/config.h"
#include "util/err.h"
#include "util/fsutil.h"
#include "util/redact.h"
#include "util/strbuf.h"
#include "util/timeutil.h"

#define GATE_SPILL_MAX ((size_t)64 << 20)

static char *xstrdup(const char *s)
{
    char *p = s ? strdup(s) : NULL;
    if (s && !p)
        abort();
    return p;
}

void gates_plan_release(struct gate_plan *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->gates[i].name);
        free(p->gates[i].type);
        free(p->gates[i].command);
        free(p->gates[i].report);
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
    out->gates = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*out->gates));
    if (!out->gates)
        abort();
    cJSON_ArrayForEach(g, arr)
    {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(g, "name");
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(g, "command");
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(g, "type");
        const cJSON *mp = cJSON_GetObjectItemCaseSensitive(g, "must_pass");
        const cJSON *to = cJSON_GetObjectItemCaseSensitive(g, "timeout_s");
        const cJSON *rep = cJSON_GetObjectItemCaseSensitive(g, "report");
        struct gate_spec *s = &out->gates[i];

        if (!cJSON_IsString(name) || !cJSON_IsString(cmd)) {
            gates_plan_release(out);
            cJSON_Delete(arr);
            return err_set(ERR_INVALID, "verification[%zu]: needs a name and a command", i);
        }
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

int gates_run_at(const struct gates_ctx *ctx, const struct gate_spec *g, const char *root,
                 const char *root_src, struct gate_result *out)
{
    const char *files = root_src ? root_src : root;
    struct sandbox_spec spec;
    struct sandbox_result res;
    char dir[4096], spill[4096 + 16];
    strbuf full, red;
    size_t from;
    cJSON *p;
    int fd, rc;

    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", g->name);
    snprintf(out->type, sizeof(out->type), "%s", g->type);
    out->command = xstrdup(g->command);
    out->must_pass = g->must_pass;
    /* the spill goes under goald's state folder (tools.spill_total_mb),
     * not the host's TMPDIR */
    if ((rc = sandbox_spill_prepare(ctx ? ctx->st : NULL, NULL, GATE_SPILL_MAX, dir,
                                 sizeof(dir))) != 0)
        return err_wrap(rc, "gate %s: the spill folder", g->name);
    if ((size_t)snprintf(spill, sizeof(spill), "%s/gate-XXXXXX", dir) >= sizeof(spill))
        return err_set(ERR_INVALID, "gate %s: the spill folder's path is too long", g->name);
    fd = mkstemp(spill);
    if (fd < 0)
        return err_set(ERR_IO, "gate %s: cannot make a temporary file", g->name);
    close(fd);
    memset(&spec, 0, sizeof(spec));
    spec.root = root;
    spec.root_src = root_src;
    spec.command = g->command;
    spec.timeout_ms = (g->timeout_s > 0 ? g->timeout_s : (int)config_int(CFG_LANE_WORK_TIMEOUT_S)) *
                      1000;
    spec.merge_stderr = 1;
    spec.spill_path = spill;
    spec.spill_max = GATE_SPILL_MAX;
    spec.st = ctx ? ctx->st : NULL;
    spec.goal_id = ctx ? ctx->goal_id : NULL;
    spec.item_id = ctx ? ctx->item_id : NULL;
    spec.run_id = ctx ? ctx->run_id : NULL;
    spec.git_common = ctx ? ctx->git_common : NULL;
    spec.git_dir = ctx ? ctx->git_dir : NULL;
    if ((rc = sandbox_run(&spec, &res)) != 0) {
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
        strbuf_add(&full, res.out.data ? res.out.data : "", res.out.len);
    }
    unlink(spill);
    strbuf_init(&red, GATE_SPILL_MAX * 2);
    redact_text(&red, strbuf_cstr(&full), full.len, NULL);
    hash_sha256_hex(out->output_hash, strbuf_cstr(&red), red.len);
    /* test cases from the report file (read under the path policy: the
     * gate wrote it) or the output; counts from them, else from summary
     * lines */
    if ((rc = gates_parse_cases(&out->cases, strbuf_cstr(&red), red.len, files, g->report,
                                out->note, sizeof(out->note))) != 0) {
        strbuf_release(&red);
        strbuf_release(&full);
        sandbox_result_release(&res);
        return err_wrap(rc, "gate %s", g->name);
    }
    if (out->cases.format)
        gates_counts_from_cases(&out->counts, &out->cases);
    else
        gates_parse_counts(&out->counts, strbuf_cstr(&red), red.len);
    if (out->cases.truncated && !out->note[0])
        snprintf(out->note, sizeof(out->note), "more than %d test cases: the rest were not read",
                 GATES_CASES_MAX);
    /* keep the tail, starting at a character boundary */
    from = red.len > GATES_TAIL ? red.len - GATES_TAIL : 0;
    while (from < red.len && ((unsigned char)red.buf[from] & 0xc0) == 0x80)
        from++;
    out->output_tail = xstrdup(strbuf_cstr(&red) + from);
    strbuf_release(&red);
    strbuf_release(&full);
    sandbox_result_release(&res);

    if (ctx && ctx->st) {
        p = cJSON_CreateObject();
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
        store_event_add(ctx->st, ctx->goal_id, ctx->item_id, ctx->run_id, "gate.completed", p,
                        NULL);
        cJSON_Delete(p);
    }
    return 0;
}

static void bind_count(sqlite3_stmt *s, int i, int v)
{
    if (v < 0)
        sqlite3_bind_null(s, i);
    else
        sqlite3_bind_int(s, i, v);
}

static const char *const status_names[] = {"pass", "fail", "skip"};

/* The cases of r into gate_cases: failures first, then passes, then skips,
 * at most GATES_CASES_STORED rows; *cut receives how many were left out. */
static int store_cases(store *st, int64_t id, const struct test_cases *c, size_t *cut)
{
    static const char sql[] =
        "INSERT INTO gate_cases(gate_result_id, name, status, file) VALUES (?,?,?,?)";
    static const enum test_status order[] = {TEST_FAIL, TEST_PASS, TEST_SKIP};
    size_t stored = 0;
    sqlite3_stmt *s;
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
            if ((rc = store_prepare(st, &s, sql)) != 0)
                break;
            sqlite3_bind_int64(s, 1, id);
            store_bind_text(s, 2, c->v[i].id);
            store_bind_text(s, 3, status_names[c->v[i].status]);
            store_bind_text(s, 4, c->v[i].file);
            if (sqlite3_step(s) != SQLITE_DONE)
                rc = store_err(st, "gate case");
            store_done(s);
            stored++;
        }
    }
    return rc;
}

int gates_store(const struct gates_ctx *ctx, const struct gate_result *r, const char *tree_id,
                int64_t *id_out)
{
    static const char sql[] =
        "INSERT INTO gate_results(goal_id, item_id, run_id, name, type, command, must_pass,"
        " passed, exit_code, duration_ms, output_tail, output_hash, tree_id, classification,"
        " tests_passed, tests_failed, tests_skipped, tests_total, created_at, tests_format, note)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    static const char note_sql[] = "UPDATE gate_results SET note = ? WHERE id = ?";
    sqlite3_stmt *s;
    int64_t id = 0;
    size_t cut = 0;
    int rc;

    if ((rc = store_tx_begin(ctx->st)) != 0)
        return rc;
    if ((rc = store_prepare(ctx->st, &s, sql)) != 0)
        goto out;
    store_bind_text(s, 1, ctx->goal_id);
    store_bind_text(s, 2, ctx->item_id);
    store_bind_text(s, 3, ctx->run_id);
    store_bind_text(s, 4, r->name);
    store_bind_text(s, 5, r->type);
    store_bind_text(s, 6, r->command);
    sqlite3_bind_int(s, 7, r->must_pass);
    sqlite3_bind_int(s, 8, r->passed);
    sqlite3_bind_int(s, 9, r->exit_code);
    sqlite3_bind_int64(s, 10, r->duration_ms);
    store_bind_text(s, 11, r->output_tail);
    store_bind_text(s, 12, r->output_hash);
    store_bind_text(s, 13, tree_id);
    store_bind_text(s, 14, r->classification[0] ? r->classification : NULL);
    bind_count(s, 15, r->counts.passed);
    bind_count(s, 16, r->counts.failed);
    bind_count(s, 17, r->counts.skipped);
    bind_count(s, 18, r->counts.total);
    sqlite3_bind_int64(s, 19, time_now_ms());
    store_bind_text(s, 20, r->cases.format ? r->cases.format : r->counts.format);
    store_bind_text(s, 21, r->note[0] ? r->note : NULL);
    if (sqlite3_step(s) != SQLITE_DONE)
        rc = store_err(ctx->st, "gate result");
    else
        id = sqlite3_last_insert_rowid(store_db(ctx->st));
    store_done(s);
    if (rc || (rc = store_cases(ctx->st, id, &r->cases, &cut)) != 0)
        goto out;
    if (cut) {
        char note[sizeof(r->note) + 128];
        snprintf(note, sizeof(note), "%s%s%zu of %zu test cases stored (failures first)",
                 r->note, r->note[0] ? "; " : "", r->cases.n - cut, r->cases.n);
        if ((rc = store_prepare(ctx->st, &s, note_sql)) != 0)
            goto out;
        store_bind_text(s, 1, note);
        sqlite3_bind_int64(s, 2, id);
        if (sqlite3_step(s) != SQLITE_DONE)
            rc = store_err(ctx->st, "gate result");
        store_done(s);
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

int gates_cases_load(store *st, int64_t gate_result_id, struct test_cases *out)
{
    static const char fmt_sql[] = "SELECT tests_format FROM gate_results WHERE id = ?";
    static const char sql[] =
        "SELECT name, status, file FROM gate_cases WHERE gate_result_id = ? ORDER BY rowid";
    static const char *const formats[] = {"junit", "tap", "pytest", "go", "ctest", "cargo", "node"};
    struct case_builder b;
    sqlite3_stmt *s;
    const char *format = NULL;
    int rc, step;

    memset(out, 0, sizeof(*out));
    if ((rc = store_prepare(st, &s, fmt_sql)) != 0)
        return rc;
    sqlite3_bind_int64(s, 1, gate_result_id);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW && sqlite3_column_text(s, 0))
        for (size_t i = 0; i < sizeof(formats) / sizeof(*formats); i++)
            if (!strcmp((const char *)sqlite3_column_text(s, 0), formats[i]))
                format = formats[i];
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        rc = store_err(st, "gate result");
    else if (step == SQLITE_DONE)
        rc = err_set(ERR_NOTFOUND, "gate result %lld: not found", (long long)gate_result_id);
    store_done(s);
    if (rc)
        return rc;
    if ((rc = store_prepare(st, &s, sql)) != 0)
        return rc;
    cb_init(&b, out);
    sqlite3_bind_int64(s, 1, gate_result_id);
    while (!rc && (step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        const char *stat = (const char *)sqlite3_column_text(s, 1);
        const char *file = (const char *)sqlite3_column_text(s, 2);
        enum test_status ts = !strcmp(stat, "fail") ? TEST_FAIL
                              : !strcmp(stat, "skip") ? TEST_SKIP
                                                      : TEST_PASS;
        rc = cb_add(&b, name, strlen(name), ts, file, file ? strlen(file) : 0);
    }
    if (!rc && step != SQLITE_DONE)
        rc = store_err(st, "gate cases");
    store_done(s);
    cb_release(&b);
    if (!rc && out->n)
        out->format = format;
    if (rc)
        test_cases_release(out);
    return rc;
}
