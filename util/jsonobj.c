/* Additions to a cJSON object (util/jsonobj.h). */
#include "util/jsonobj.h"

#include <cjson/cJSON.h>

void jsonobj_add_str_or_null(cJSON *o, const char *key, const char *v)
{
    if (v)
        cJSON_AddStringToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}
