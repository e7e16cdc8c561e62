/*
 * jsonw.h - a small streaming JSON writer to a FILE, for outputs too large
 * to build as a cJSON tree (a report of 100,000 work items).  Commas and
 * nesting are tracked for the caller; strings are escaped (control
 * characters as \u00XX; invalid UTF-8 passed through byte for byte).
 */
#ifndef GOALD_UTIL_JSONW_H
#define GOALD_UTIL_JSONW_H

#include <stdint.h>
#include <stdio.h>

#include "util/strbuf.h"

#define JSONW_DEPTH 32

struct jsonw {
    FILE *f;
    int depth;
    int count[JSONW_DEPTH]; /* values written at each level */
    int after_key;
};

void jsonw_init(struct jsonw *w, FILE *f);
void jsonw_object_begin(struct jsonw *w);
void jsonw_object_end(struct jsonw *w);
void jsonw_array_begin(struct jsonw *w);
void jsonw_array_end(struct jsonw *w);
void jsonw_key(struct jsonw *w, const char *key);
void jsonw_string(struct jsonw *w, const char *s); /* NULL writes null */
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_double(struct jsonw *w, double v);
void jsonw_bool(struct jsonw *w, int v);
void jsonw_null(struct jsonw *w);
void jsonw_raw(struct jsonw *w, const char *json); /* an already-serialised value */

/* Write s as a JSON string literal (with quotes) to f. */
void json_write_escaped(FILE *f, const char *s);

/* Append s as a JSON string literal (with quotes) to out, escaped as
 * json_write_escaped() does (the same code); on failure (ERR_TOOBIG) out
 * is left as it was. */
int json_escape_append(strbuf *out, const char *s);

#endif
