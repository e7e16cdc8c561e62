/*
 * embedded.h - files built into the binary (cmake/embed_files.cmake).
 */
#ifndef GOALD_UTIL_EMBEDDED_H
#define GOALD_UTIL_EMBEDDED_H

#include <stddef.h>

struct embedded_file {
    const char *name; /* relative path; NULL ends a table */
    const char *data; /* NUL-terminated too */
    size_t len;
};

/* The demo: the project (demo-project/...) and the script (demo.jsonl). */
extern const struct embedded_file embedded_demo[];

/* docs/openapi.json, the HTTP API's description (http/static.c). */
extern const struct embedded_file embedded_openapi[];

/* The web dashboard, share/web/NAME by NAME (http/static.c). */
extern const struct embedded_file embedded_web[];

#endif
