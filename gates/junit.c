/*
 * junit.c - test cases from a JUnit XML report, parsed with expat.
 *
 * The report is written by the gate, inside the sandbox, from code the
 * model may have written: hostile.  Entities are never expanded beyond
 * XML's five predefined ones: a DOCTYPE that declares any entity (the
 * "billion laughs", external entities naming host files) is refused as a
 * whole, and parameter entities are never parsed.
 *
 * <testcase classname="c" name="n" file="f"> anywhere (testsuites and
 * testsuite nest freely) is a case "c::n" ("n" without a classname); a
 * <failure> or <error> child makes it FAIL, else a <skipped> child SKIP,
 * else it passed.
 */
#include <expat.h>
#include <stdlib.h>
#include <string.h>

#include "gates/cases_int.h"
#include "util/err.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

struct junit {
    XML_Parser p;
    struct case_builder b;
    int depth;      /* element depth */
    int case_depth; /* depth of the open <testcase>, 0 none */
    int failed, skipped;
    char *classname, *name, *file;
    int refused;
};

static const char *attr(const XML_Char **a, const char *key)
{
    for (; a && a[0]; a += 2)
        if (!strcmp(a[0], key))
            return a[1];
    return NULL;
}

/* s, at most CASE_ID_MAX bytes of it (NULL stays NULL). */
static char *dup_cap(const char *s)
{
    return s ? xstrndup(s, CASE_ID_MAX) : NULL;
}

static void XMLCALL on_start(void *ud, const XML_Char *el, const XML_Char **a)
{
    struct junit *j = ud;

    j->depth++;
    if (!j->case_depth) {
        if (!strcmp(el, "testcase")) {
            j->case_depth = j->depth;
            j->failed = j->skipped = 0;
            j->classname = dup_cap(attr(a, "classname"));
            j->name = dup_cap(attr(a, "name"));
            j->file = dup_cap(attr(a, "file"));
        }
        return;
    }
    if (j->depth == j->case_depth + 1) {
        if (!strcmp(el, "failure") || !strcmp(el, "error"))
            j->failed = 1;
        else if (!strcmp(el, "skipped"))
            j->skipped = 1;
    }
}

static void XMLCALL on_end(void *ud, const XML_Char *el)
{
    struct junit *j = ud;
    (void)el;

    if (j->case_depth && j->depth == j->case_depth) {
        enum test_status st = j->failed ? TEST_FAIL : j->skipped ? TEST_SKIP : TEST_PASS;
        strbuf id;

        strbuf_init(&id, CASE_ID_MAX * 2 + 4);
        if (j->name) {
            if (j->classname && *j->classname)
                strbuf_addf_cut(&id, "%s::", j->classname);
            strbuf_adds_cut(&id, j->name); /* an id: cut as cb_add cuts it */
            cb_add(&j->b, strbuf_cstr(&id), id.len, st, j->file, j->file ? strlen(j->file) : 0);
        }
        strbuf_release(&id);
        free(j->classname);
        free(j->name);
        free(j->file);
        j->classname = j->name = j->file = NULL;
        j->case_depth = 0;
    }
    j->depth--;
}

static void XMLCALL on_entity_decl(void *ud, const XML_Char *name, int is_param,
                                   const XML_Char *value, int value_len, const XML_Char *base,
                                   const XML_Char *system_id, const XML_Char *public_id,
                                   const XML_Char *notation)
{
    struct junit *j = ud;
    (void)name, (void)is_param, (void)value, (void)value_len, (void)base, (void)system_id;
    (void)public_id, (void)notation;

    j->refused = 1;
    XML_StopParser(j->p, XML_FALSE);
}

/* An external entity is never read. */
static int XMLCALL on_external(XML_Parser p, const XML_Char *context, const XML_Char *base,
                               const XML_Char *system_id, const XML_Char *public_id)
{
    struct junit *j = XML_GetUserData(p);
    (void)context, (void)base, (void)system_id, (void)public_id;

    j->refused = 1;
    return XML_STATUS_ERROR;
}

int gates_parse_junit(struct test_cases *out, const char *xml, size_t len)
{
    struct junit j;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    memset(&j, 0, sizeof(j));
    if (len > (size_t)1 << 30)
        return err_set(ERR_INVALID, "larger than 1 GiB");
    j.p = xcheck(XML_ParserCreate(NULL)); /* NULL: out of memory */
    cb_init(&j.b, out);
    XML_SetUserData(j.p, &j);
    XML_SetParamEntityParsing(j.p, XML_PARAM_ENTITY_PARSING_NEVER);
    XML_SetElementHandler(j.p, on_start, on_end);
    XML_SetEntityDeclHandler(j.p, on_entity_decl);
    XML_SetExternalEntityRefHandler(j.p, on_external);
    out->format = "junit";
    if (XML_Parse(j.p, xml, (int)len, XML_TRUE) != XML_STATUS_OK || j.refused) {
        if (j.refused)
            rc = err_set(ERR_INVALID, "XML entity declarations are not accepted (line %lu)",
                         (unsigned long)XML_GetCurrentLineNumber(j.p));
        else
            rc = err_set(ERR_INVALID, "not well-formed XML (line %lu: %s)",
                         (unsigned long)XML_GetCurrentLineNumber(j.p),
                         XML_ErrorString(XML_GetErrorCode(j.p)));
        cb_release(&j.b);
        test_cases_release(out);
        goto out;
    }
    cb_release(&j.b);
out:
    free(j.classname);
    free(j.name);
    free(j.file);
    XML_ParserFree(j.p);
    return rc;
}
