#include "lifecycle/job.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include "lifecycle/control.h"
#include "llm/llm.h"
#include "store/event.h"
#include "store/goal.h"
#include "store/run.h"
#include "util/err.h"
#include "util/fault.h"
#include "util/hash.h"
#include "util/jsonobj.h"
#include "util/log.h"
#include "util/path.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/xalloc.h"

int job_fail(struct job_ctx *j, const char *cls, const char *fmt, ...)
{
    va_list ap;
    char *red;

    /* truncation: ok, an error class name, short */
    snprintf(j->error_class, sizeof(j->error_class), "%s", cls);
    strbuf_reset(&j->failure);
    va_start(ap, fmt);
    strbuf_vaddf_cut(&j->failure, fmt, ap); /* a reason: cut at its cap */
    va_end(ap);
    if (j->llm) {
        red = llm_redact(j->llm, strbuf_cstr(&j->failure));
        strbuf_reset(&j->failure);
        strbuf_adds_cut(&j->failure, red);
        free(red);
    }
    return ERR_FAIL;
}

void job_event_or_warn(struct job_ctx *j, const char *type, const struct cJSON *payload)
{
    if (store_event_add(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id, type,
                        payload, NULL) != 0)
        log_warn("run %.8s: event %s not written: %s", j->claim.run_id, type, err_last());
}

void job_error_signature(char out[65], const char *cls, const char *text)
{
    strbuf sb;
    const char *p = text ? text : "";

    /* strip what varies between identical failures: numbers, hex ids,
     * paths; collapse whitespace */
    strbuf_init(&sb, 1 << 20); /* what is hashed: cut at 1 MiB */
    strbuf_addf_cut(&sb, "%s:", cls ? cls : "");
    while (*p) {
        if (*p == '/' || (*p == '.' && p[1] == '/')) {
            while (*p && !isspace((unsigned char)*p) && *p != ':' && *p != '\'' && *p != '"')
                p++;
            strbuf_adds_cut(&sb, "<path>");
        } else if (isdigit((unsigned char)*p)) {
            while (isxdigit((unsigned char)*p) || *p == '.' || *p == 'x')
                p++;
            strbuf_addc_cut(&sb, '#');
        } else if (isspace((unsigned char)*p)) {
            while (isspace((unsigned char)*p))
                p++;
            strbuf_addc_cut(&sb, ' ');
        } else {
            strbuf_addc_cut(&sb, (char)tolower((unsigned char)*p));
            p++;
        }
    }
    hash_sha256_hex(out, sb.buf ? sb.buf : "", sb.len);
    strbuf_release(&sb);
}

int job_renew_lease(struct job_ctx *j)
{
    return store_run_renew_lease(j->st, j->claim.run_id,
                                 time_now_ms() +
                                     (int64_t)(j->claim.timeout_s > 0 ? j->claim.timeout_s : 600) *
                                         1000 +
                                     30000);
}

int job_check_live(struct job_ctx *j)
{
    char rs[16] = "", gs[16] = "";

    if (!j->claim.run_id[0])
        return 0;
    if (store_run_live_status(j->st, j->claim.run_id, rs, gs) != 0) {
        err_clear();
        return 0;
    }
    /* a run already finished may still ask for Plan B or an escalation's
     * analysis; one aborted (cancel, lease, timeout) may not */
    if (strcmp(rs, "aborted") != 0 && strcmp(rs, "timeout") != 0 && strcmp(gs, "cancelled") != 0 &&
        strcmp(gs, "completed") != 0)
        return 0;
    return job_fail(j, "cancelled", "the goal is %s and the run %s: no more model calls", gs,
                    rs);
}

void job_breaker_failed(struct job_ctx *j, const char *cls, const char *msg)
{
    /* the key or the configuration: no cooldown helps, only a change (or a
     * human) does */
    if (!strcmp(cls, "auth") || !strcmp(cls, "config"))
        breaker_trip(j->st, cls, j->claim.run_id, msg, time_now_ms());
    else
        breaker_record(j->st, cls, j->claim.run_id, time_now_ms());
}

int job_process_is(long pid, const char *run_id)
{
    char path[64], buf[4096];
    ssize_t n;
    int fd, found = 0;

    if (pid <= 0 || kill((pid_t)pid, 0) != 0)
        return 0;
    if (path_fmt(path, sizeof(path), "/proc/%ld/cmdline", pid) != 0)
        return 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* the arguments, NUL-separated: "job" followed by the run id */
    for (const char *a = buf, *prev = NULL; a < buf + n; a += strlen(a) + 1) {
        if (prev && !strcmp(prev, "job") && !strcmp(a, run_id))
            found = 1;
        prev = a;
    }
    return found;
}

int job_ask_json(struct job_ctx *j, const char *stage, const char *system, const char *user,
                 const char *schema, cJSON **answer)
{
    const char *cls = NULL;
    int rc = job_try_json(j, stage, system, user, schema, answer, &cls);

    if (rc && cls)
        rc = job_fail(j, cls, "%s", err_last());
    return rc;
}

int job_try_json(struct job_ctx *j, const char *stage, const char *system, const char *user,
                 const char *schema, cJSON **answer, const char **cls)
{
    struct llm_message msgs[2];
    struct llm_request req;
    struct llm_response resp;
    struct llm_error err;
    const char *limit = NULL, *dummy;
    int index = j->model_index;
    int rc;

    if (!cls)
        cls = &dummy;
    *cls = NULL;
    *answer = NULL;
    if (job_check_live(j) != 0)
        return ERR_FAIL;
    if (j->claim.run_id[0])
        job_renew_lease(j);
    if (control_check_run(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                          &j->usage, time_mono_ms(), &limit) != 0) {
        *cls = "limit";
        return ERR_FAIL;
    }
    if (control_check_budget(j->st, j->goal->id, j->item ? j->item->id : NULL, j->claim.run_id,
                             j->last_call_tokens, j->last_call_cost, &limit) != 0) {
        *cls = "budget";
        return ERR_FAIL;
    }
    llm_message_init(&msgs[0], LLM_SYSTEM, system);
    llm_message_init(&msgs[1], LLM_USER, user);
    memset(&req, 0, sizeof(req));
    req.stage = stage;
    req.run_id = j->claim.run_id;
    req.goal_id = j->goal->id;
    req.item_id = j->item ? j->item->id : NULL;
    req.messages = msgs;
    req.nmessages = 2;
    req.response_schema = schema;
    rc = llm_chat_chain(j->llm, j->model_index, &req, &resp, &err, &index);
    j->usage.turns++;
    j->model_index = index;
    if (rc) {
        job_breaker_failed(j, llm_error_class_name(err.cls), err.message);
        *cls = llm_error_class_name(err.cls);
        rc = err_set(ERR_FAIL, "%s: %s", stage, err.message ? err.message : "model call failed");
        goto out;
    }
    breaker_record(j->st, NULL, j->claim.run_id, time_now_ms());
    j->usage.tokens += resp.usage.input + resp.usage.output;
    j->last_call_tokens = resp.usage.input + resp.usage.output;
    j->last_call_cost = resp.cost_usd;
    *answer = resp.json ? cJSON_Parse(resp.json) : NULL;
    if (!*answer || !cJSON_IsObject(*answer)) {
        cJSON_Delete(*answer);
        *answer = NULL;
        *cls = "invalid_response";
        rc = err_set(ERR_FAIL, "%s: the answer is not a JSON object", stage);
    } else {
        /* every text the model chose (a finding, an item's description, a
         * question) is kept at most UTF8_TEXT_MAX bytes, with a note */
        jsonobj_cap_strings(*answer, UTF8_TEXT_MAX);
    }
out:
    llm_response_release(&resp);
    llm_error_release(&err);
    llm_message_release(&msgs[0]);
    llm_message_release(&msgs[1]);
    return rc;
}
