#include "lifecycle/breaker.h"

#include <cjson/cJSON.h>

#include "store/breaker.h"
#include "store/event.h"
#include "util/config.h"
#include "util/xalloc.h"

int breaker_event_write(store *st, const char *type, const char *cls, int failures,
                        const char *run_id, const char *reason)
{
    cJSON *p = cJSON_CreateObject();
    int rc;

    xcheck(p);
    cJSON_AddStringToObject(p, "error_class", cls);
    if (reason)
        cJSON_AddStringToObject(p, "reason", reason);
    cJSON_AddNumberToObject(p, "failures", failures);
    cJSON_AddNumberToObject(p, "threshold", (double)config_int(CFG_BREAKER_THRESHOLD));
    cJSON_AddNumberToObject(p, "cooldown_s", (double)config_int(CFG_BREAKER_COOLDOWN_S));
    rc = store_event_add(st, NULL, NULL, run_id, type, p, NULL);
    cJSON_Delete(p);
    return rc;
}

int breaker_close_config(store *st, const char *cls, const char *why, int64_t now_ms,
                         int *changed)
{
    int rc, closed = 0;

    if (changed)
        *changed = 0;
    if ((rc = store_tx_begin(st)) != 0)
        return rc;
    if ((rc = store_breaker_close_config(st, cls, now_ms, &closed)) != 0)
        goto out;
    if (closed && (rc = breaker_event_write(st, "circuit.closed", cls, 0, NULL, why)) != 0)
        goto out;
    if (changed)
        *changed = closed;
out:
    return store_tx_end(st, rc);
}
