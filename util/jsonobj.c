/* Additions to a cJSON object (util/jsonobj.h). */
#include "util/jsonobj.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/xalloc.h"

void jsonobj_add_str_or_null(cJSON *o, const char *key, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

int jsonobj_has_long_string(const cJSON *v, size_t max)
{
    const cJSON *it;

    if (cJSON_IsString(v))
        return v->valuestring && strlen(v->valuestring) > max;
    cJSON_ArrayForEach(it, v)
    {
        if (jsonobj_has_long_string(it, max))
            return 1;
    }
    return 0;
}

size_t jsonobj_cap_strings(cJSON *v, size_t max)
{
    cJSON *it;
    size_t n = 0, len;
    char *capped;

    if (cJSON_IsString(v) && v->valuestring && (len = strlen(v->valuestring)) > max) {
        capped = utf8_cap_dup(v->valuestring, len, max);
        if (v->type & cJSON_IsReference) {
            v->type &= ~cJSON_IsReference; /* the text was never ours: not freed */
            v->valuestring = capped;
        } else {
            cJSON_SetValuestring(v, capped);
            free(capped);
        }
        return 1;
    }
    cJSON_ArrayForEach(it, v) n += jsonobj_cap_strings(it, max);
    return n;
}
