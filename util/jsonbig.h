/*
 * jsonbig.h - cJSON trees whose long strings are decoded in place, inside
 * the text they were parsed from.
 *
 * A model's tool call carries a whole file in one JSON string (tens of
 * MiB).  cJSON_Parse() would decode it into a new allocation while the
 * text still exists: twice the content.  jsonbig_parse() instead finds the
 * string literals of at least `min` bytes, hands cJSON the text without
 * them (short placeholders: cJSON still parses every bit of structure),
 * then decodes each long literal inside the text itself -- a JSON string's
 * decoded form is never longer than its literal -- moves the decoded
 * strings to the start of the buffer and shrinks it.  Their nodes in the
 * tree are string references (cJSON_IsReference) into that buffer, which
 * the struct owns; cJSON_Delete() never frees them.
 *
 * Decoding follows cJSON 1.7's parse_string exactly (the escapes \" \\ \/
 * \b \f \n \r \t \uXXXX with surrogate pairs; what cJSON refuses fails the
 * same way), so the tree equals cJSON_Parse()'s of the same text.  Input
 * that does not tokenise cleanly is handed to cJSON_Parse() whole: the
 * result is then plain (nothing referenced), never different.
 *
 * Ownership: jsonbig_parse() takes the text (malloc'd); jsonbig_release()
 * frees the tree and the buffer.  A long string leaves the struct only
 * through jsonbig_take() or jsonbig_print_take(), which hand over malloc'd
 * memory (the buffer itself when nothing else lives in it).
 */
#ifndef GOALD_UTIL_JSONBIG_H
#define GOALD_UTIL_JSONBIG_H

#include <stddef.h>

struct cJSON;

#define JSONBIG_MIN ((size_t)64 << 10) /* a literal this long is decoded in place */

struct jsonbig_str {
    struct cJSON *node; /* its node in root; NULL once taken */
    size_t off, len;    /* where its decoded bytes lie in buf (NUL after) */
};

struct jsonbig {
    struct cJSON *root; /* NULL: the text was not JSON */
    char *buf; /* owned: the text, unchanged while nbig is 0; else the decoded long strings */
    size_t nbig;
    struct jsonbig_str *big; /* in document order */
};

/* Parse the first JSON value of text (len bytes, NUL-terminated, malloc'd:
 * taken in every case, *text set to NULL) into jb; literals of at least
 * min bytes (0: JSONBIG_MIN) are decoded in place.  0, or ERR_INVALID when
 * cJSON would refuse the text (jb->root NULL, jb->buf the text as given).
 * Release jb in both cases. */
int jsonbig_parse(struct jsonbig *jb, char **text, size_t len, size_t min);

/* The string of node (a string in jb->root) as malloc'd memory, or NULL
 * when node is not a string.  A long string is moved out of jb->buf when
 * it is the last one living there (no copy), else copied; afterwards the
 * node's valuestring is NULL (do not use it again).  A short string is
 * taken from cJSON the same way. */
char *jsonbig_take(struct jsonbig *jb, struct cJSON *node);

/* cJSON_PrintUnformatted(node) as malloc'd text, for a subtree holding
 * long strings: when they are the only ones living in jb->buf, the text is
 * built inside the buffer (each string escaped in place, right to left)
 * and the buffer handed over; else built in a new allocation.  The long
 * strings of node are taken (their nodes' valuestring NULL afterwards).
 * NULL for an invalid node. */
char *jsonbig_print_take(struct jsonbig *jb, struct cJSON *node);

void jsonbig_release(struct jsonbig *jb);

/* The decoder, exposed for tests: decode the body of one string literal
 * (in, n bytes: between the quotes) into out (at least n + 1 bytes; may
 * be in itself, out <= in), NUL-terminated.  out NULL: only check.  The
 * decoded length (up to the first NUL cJSON would stop at is the caller's
 * business), or -1 for what cJSON refuses.  cJSON's quirks are kept: \u
 * with a bad digit is a NUL, and a backslash left last escapes the closing
 * quote (in[n] is never read). */
long jsonbig_decode(const char *in, size_t n, char *out);

#endif
