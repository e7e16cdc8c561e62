/*
 * report_internal.h - what report.c and report_item.c share (not for
 * other files).
 */
#ifndef GOALD_LIFECYCLE_REPORT_INTERNAL_H
#define GOALD_LIFECYCLE_REPORT_INTERNAL_H

#include <stdint.h>

#include "store/store.h"

struct cJSON;

/* o[k] = ms as RFC 3339, or null when ms is negative (unset). */
void report_add_time(struct cJSON *o, const char *k, int64_t ms);

/* The item's latest verification record (cJSON_Delete), or NULL when it
 * has none or it cannot be read. */
struct cJSON *report_item_verification(store *st, const char *item_id);

/* o[k] as a string, or "" when absent. */
const char *report_jstr(const struct cJSON *o, const char *k);

#endif
