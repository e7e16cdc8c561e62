/*
 * cases_int.h - internal to gates/: building a test_cases list.
 *
 * A builder appends cases to a struct test_cases, merging a repeated id
 * (the worst status wins: FAIL > PASS > SKIP) through a hash index.  Ids
 * are cut at CASE_ID_MAX bytes (at a UTF-8 boundary), control characters
 * become '?', and surrounding blanks are trimmed; an empty id is dropped.
 * Past GATES_CASES_MAX ids the list is marked truncated.  The index is
 * freed by cb_release; the list stays with its test_cases.  Out of memory
 * ends the process (util/xalloc.h): nothing here fails for want of it.
 */
#ifndef GOALD_GATES_CASES_INT_H
#define GOALD_GATES_CASES_INT_H

#include <stddef.h>

#include "gates/gates.h"

#define CASE_ID_MAX 1024

struct case_index {
    size_t *slot; /* index + 1 into the list; 0 empty */
    size_t n;     /* a power of two */
};

struct case_builder {
    struct test_cases *c;
    size_t alloc;
    struct case_index ix;
};

void cb_init(struct case_builder *b, struct test_cases *c);
/* 0 (an int for the callers' chains of rc).  file may be NULL (file_len
 * ignored then). */
int cb_add(struct case_builder *b, const char *id, size_t id_len, enum test_status st,
           const char *file, size_t file_len);
void cb_release(struct case_builder *b);

/* The position of id in c (indexed by ix), or (size_t)-1. */
size_t case_index_find(const struct case_index *ix, const struct test_cases *c, const char *id,
                       size_t len);
/* Index every case of c (released with case_index_release). */
void case_index_build(struct case_index *ix, const struct test_cases *c);
void case_index_release(struct case_index *ix);

/* A line of a text (cases_next_line): its start and length, without
 * "\n" or "\r\n". */
struct line {
    const char *p;
    size_t n;
};

/* The next line of s[*pos..len) into l; 0 at the end. */
int cases_next_line(const char *s, size_t len, size_t *pos, struct line *l);
/* p (n bytes) starts with word. */
int cases_starts(const char *p, size_t n, const char *word);
/* needle in p (n bytes), or NULL. */
const char *cases_find_in(const char *p, size_t n, const char *needle);

/* The text formats (gates/cases_text.c, cases_py.c): each fills out (initialised
 * empty by the caller, format set even with no cases).  0. */
int cases_parse_tap(struct test_cases *out, const char *s, size_t len);
int cases_parse_node(struct test_cases *out, const char *s, size_t len);
int cases_parse_pytest(struct test_cases *out, const char *s, size_t len);
int cases_parse_go(struct test_cases *out, const char *s, size_t len);
int cases_parse_ctest(struct test_cases *out, const char *s, size_t len);
int cases_parse_cargo(struct test_cases *out, const char *s, size_t len);
int cases_parse_unittest(struct test_cases *out, const char *s, size_t len);

/* A ctest result line " 2/11 Test  #2: name ...   Passed": the name's
 * start, or NULL when p..e is none (gates/cases_text.c). */
const char *cases_ctest_name(const char *p, const char *e);
/* Where the status starts after name ("***Failed", " Passed") with *st;
 * NULL when there is none. */
const char *cases_ctest_status(const char *name, const char *e, enum test_status *st);

/* The cases inside C test executables (gates/cases_c.c): Unity, cmocka
 * (its standard, TAP and subunit outputs), Check, under ctest or alone.
 * Same contract as the text formats; 0 cases when no inner case is seen. */
int cases_parse_c(struct test_cases *out, const char *s, size_t len);

#endif
