/*
 * jsonbig.c - cJSON trees whose long strings are decoded in place
 * (jsonbig.h says why and who owns what).
 *
 * jsonbig_parse():
 *   1. scan the first value: every string literal, its end found as
 *      cJSON finds it (a backslash skips the next byte); brackets tell
 *      keys from values, numbered in document order.  Value literals of at
 *      least min bytes whose escapes cJSON accepts are "long".
 *   2. cJSON_Parse() of the text with each long literal replaced by "".
 *   3. check: the tree's string values, in preorder (= document order),
 *      are as many as the scan counted, and each long one's is "".  If
 *      anything disagrees (trailing text after the value, say), the whole
 *      text goes to cJSON_Parse() as it is: never a different result.
 *   4. decode each long literal into the buffer from its start (each
 *      decoded string + NUL is shorter than its literal, so the writes
 *      never pass the reads), shrink the buffer, point the nodes at it.
 */
#include "util/jsonbig.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "util/err.h"
#include "util/strbuf.h"
#include "util/xalloc.h"

/* ---- the decoder: cJSON 1.7's parse_string, in place ------------------- */

/* cJSON's parse_hex4: an invalid digit makes the whole value 0 (not an
 * error: cJSON then decodes \u00zz as a NUL). */
static unsigned hex4(const unsigned char *p)
{
    unsigned h = 0;

    for (int i = 0; i < 4; i++) {
        unsigned d;
        if (p[i] >= '0' && p[i] <= '9')
            d = p[i] - '0';
        else if (p[i] >= 'A' && p[i] <= 'F')
            d = 10u + p[i] - 'A';
        else if (p[i] >= 'a' && p[i] <= 'f')
            d = 10u + p[i] - 'a';
        else
            return 0;
        h = (h << 4) | d;
    }
    return h;
}

/* \uXXXX (or a surrogate pair) at p, end the literal's end: the bytes
 * consumed (6 or 12), 0 when cJSON refuses; the UTF-8 into *o. */
static size_t utf16(const unsigned char *p, const unsigned char *end, unsigned char **o)
{
    unsigned long cp;
    unsigned first, second;
    size_t seq = 6, n;
    unsigned char mark = 0;

    if (end - p < 6)
        return 0;
    first = hex4(p + 2);
    if (first >= 0xDC00 && first <= 0xDFFF)
        return 0;
    if (first >= 0xD800 && first <= 0xDBFF) {
        const unsigned char *q = p + 6;
        if (end - q < 6 || q[0] != '\\' || q[1] != 'u')
            return 0;
        second = hex4(q + 2);
        if (second < 0xDC00 || second > 0xDFFF)
            return 0;
        cp = 0x10000 + (((first & 0x3FFu) << 10) | (second & 0x3FFu));
        seq = 12;
    } else {
        cp = first;
    }
    if (cp < 0x80)
        n = 1;
    else if (cp < 0x800)
        n = 2, mark = 0xC0;
    else if (cp < 0x10000)
        n = 3, mark = 0xE0;
    else
        n = 4, mark = 0xF0;
    if (*o) { /* the digits were read above: writing now is safe in place */
        for (size_t i = n - 1; i > 0; i--) {
            (*o)[i] = (unsigned char)((cp | 0x80) & 0xBF);
            cp >>= 6;
        }
        (*o)[0] = (unsigned char)(n > 1 ? (cp | mark) & 0xFF : cp & 0x7F);
        *o += n;
    }
    return seq;
}

long jsonbig_decode(const char *in, size_t n, char *out)
{
    const unsigned char *p = (const unsigned char *)in, *end = p + n;
    unsigned char *o = (unsigned char *)out, *start = o;
    size_t count = 0; /* decoded bytes when only checking */

    while (p < end) {
        size_t seq = 2;
        unsigned char c;

        if (*p != '\\') {
            if (o)
                *o++ = *p;
            p++;
            count++;
            continue;
        }
        if (end - p < 2) {
            /* a backslash last: only after a \u that swallowed half of a
             * "\\" (cJSON reads the four digits as 0); cJSON then takes
             * the closing quote as the escaped character */
            if (o)
                *o++ = '"';
            count++;
            break;
        }
        switch (p[1]) {
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case '"':
        case '\\':
        case '/': c = p[1]; break;
        case 'u': {
            unsigned char *before = o;
            unsigned char tmp[4], *t = tmp;
            seq = utf16(p, end, o ? &o : &t);
            if (!seq)
                return -1;
            count += o ? (size_t)(o - before) : (size_t)(t - tmp);
            p += seq;
            continue;
        }
        default:
            return -1;
        }
        if (o)
            *o++ = c;
        count++;
        p += seq;
    }
    if (o) {
        *o = '\0';
        return (long)(o - start);
    }
    return (long)count;
}

/* ---- escaping, as cJSON prints a string -------------------------------- */

static size_t esc_len(const char *s, size_t n)
{
    size_t k = 2;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
            k += 2;
        else if (c < 32)
            k += 6;
        else
            k++;
    }
    return k;
}

/* The escape of c into e (2 or 6 bytes, 0 when c stays as it is). */
static size_t esc_one(unsigned char c, char e[6])
{
    static const char hex[] = "0123456789abcdef";
    const char *short_esc = NULL;

    switch (c) {
    case '"': short_esc = "\\\""; break;
    case '\\': short_esc = "\\\\"; break;
    case '\b': short_esc = "\\b"; break;
    case '\f': short_esc = "\\f"; break;
    case '\n': short_esc = "\\n"; break;
    case '\r': short_esc = "\\r"; break;
    case '\t': short_esc = "\\t"; break;
    default: break;
    }
    if (short_esc) {
        memcpy(e, short_esc, 2);
        return 2;
    }
    if (c >= 32)
        return 0;
    memcpy(e, "\\u00", 4);
    e[4] = hex[c >> 4];
    e[5] = hex[c & 15];
    return 6;
}

/* The literal of s[0..n) written backwards so that it ends at dst_end:
 * safe in place when dst_end - esc_len(s, n) >= s (each byte reads before
 * anything is written at or below it). */
static void esc_back(char *dst_end, const char *s, size_t n)
{
    char *w = dst_end;
    char e[6];

    *--w = '"';
    for (size_t i = n; i-- > 0;) {
        size_t k = esc_one((unsigned char)s[i], e);
        if (!k) {
            *--w = s[i];
        } else {
            w -= k;
            memcpy(w, e, k);
        }
    }
    *--w = '"';
}

static char *esc_fwd(char *w, const char *s, size_t n)
{
    char e[6];

    *w++ = '"';
    for (size_t i = 0; i < n; i++) {
        size_t k = esc_one((unsigned char)s[i], e);
        if (!k) {
            *w++ = s[i];
        } else {
            memcpy(w, e, k);
            w += k;
        }
    }
    *w++ = '"';
    return w;
}

/* ---- parsing ------------------------------------------------------------ */

struct span {
    size_t start, end; /* the literal's quotes */
    size_t ordinal;    /* among the string values, in document order */
};

struct scan {
    struct span *s;
    size_t n, alloc;
    size_t nvalues;
};

static void span_push(struct scan *sc, size_t start, size_t end, size_t ordinal)
{
    if (sc->n == sc->alloc) {
        size_t a = sc->alloc ? sc->alloc * 2 : 8;
        sc->s = xrealloc(sc->s, a * sizeof(*sc->s));
        sc->alloc = a;
    }
    sc->s[sc->n].start = start;
    sc->s[sc->n].end = end;
    sc->s[sc->n].ordinal = ordinal;
    sc->n++;
}

/* Step 1.  0, or -1 when the text does not tokenise as cJSON would (an
 * unterminated literal, a long one cJSON refuses, nesting past cJSON's
 * limit): then no long strings.  Brackets are followed to tell keys (a
 * literal where an object expects a key) from values, and to stop at the
 * end of the first value: cJSON ignores what follows it. */
static int scan(struct scan *sc, const char *t, size_t len, size_t min)
{
    char stack[CJSON_NESTING_LIMIT + 1];
    size_t depth = 0;
    int expect_key = 0, started = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)t[i];
        size_t j;

        if (ch <= 32) /* cJSON's whitespace */
            continue;
        if (depth == 0 && started)
            break; /* the first value has ended */
        started = 1;
        switch (ch) {
        case '{':
        case '[':
            if (depth >= CJSON_NESTING_LIMIT)
                return -1;
            stack[depth++] = (char)ch;
            expect_key = ch == '{';
            break;
        case '}':
        case ']':
            if (depth == 0)
                return -1;
            depth--;
            expect_key = 0;
            break;
        case ',':
            expect_key = depth > 0 && stack[depth - 1] == '{';
            break;
        case ':':
            expect_key = 0;
            break;
        case '"':
            for (j = i + 1; j < len && t[j] != '"'; j++)
                if (t[j] == '\\' && ++j >= len)
                    return -1;
            if (j >= len)
                return -1;
            if (expect_key && depth > 0 && stack[depth - 1] == '{') {
                expect_key = 0; /* a key: left as it is */
            } else {
                if (j + 1 - i >= min) {
                    if (jsonbig_decode(t + i + 1, j - i - 1, NULL) < 0)
                        return -1;
                    span_push(sc, i, j, sc->nvalues);
                }
                sc->nvalues++;
            }
            i = j;
            break;
        default: /* numbers, true, false, null: no quotes in them */
            break;
        }
    }
    return 0;
}

/* Step 3: the string values of n in preorder; the long ones' nodes into
 * big[] (as many as sc->n).  0 when everything matches. */
static void walk(cJSON *n, const struct scan *sc, struct jsonbig_str *big, size_t *ord, size_t *k,
                 int *bad)
{
    for (; n && !*bad; n = n->next) {
        if (cJSON_IsString(n)) {
            if (*k < sc->n && sc->s[*k].ordinal == *ord) {
                if (!n->valuestring || n->valuestring[0])
                    *bad = 1;
                big[(*k)++].node = n;
            }
            (*ord)++;
        }
        if (n->child)
            walk(n->child, sc, big, ord, k, bad);
    }
}

/* Steps 1 to 4 on text: 0 with jb filled (root, buf = text, the long
 * strings), or -1 (nothing changed, text intact) when there is nothing
 * long or anything disagrees: the caller parses the text as it is. */
static int parse_long(struct jsonbig *jb, char *text, size_t len, size_t min)
{
    struct scan sc = {0};
    strbuf small = STRBUF_INIT;
    cJSON *root = NULL;
    size_t ord = 0, k = 0, pos = 0;
    int bad = 0, rc = -1;

    if (scan(&sc, text, len, min) != 0 || sc.n == 0)
        goto out;
    /* step 2: the text without its long literals (never longer) */
    strbuf_init(&small, len + 1);
    for (size_t i = 0, from = 0; i <= sc.n; i++) {
        size_t to = i < sc.n ? sc.s[i].start : len;
        if (strbuf_add(&small, text + from, to - from) != 0 ||
            (i < sc.n && strbuf_add(&small, "\"\"", 2) != 0))
            goto out;
        if (i < sc.n)
            from = sc.s[i].end + 1;
    }
    root = cJSON_Parse(strbuf_cstr(&small));
    strbuf_release(&small);
    if (!root)
        goto out;
    jb->big = xcalloc(sc.n, sizeof(*jb->big));
    walk(root, &sc, jb->big, &ord, &k, &bad);
    if (bad || k != sc.n || ord != sc.nvalues)
        goto out;
    /* step 4: decode from the buffer's start; pos never passes a read */
    for (size_t i = 0; i < sc.n; i++) {
        if (jsonbig_decode(text + sc.s[i].start + 1, sc.s[i].end - sc.s[i].start - 1,
                           text + pos) < 0)
            abort(); /* impossible: scan() checked every literal */
        jb->big[i].off = pos;
        jb->big[i].len = strlen(text + pos); /* cJSON's string ends at a \u0000 */
        pos += jb->big[i].len + 1;
    }
    {
        char *p = realloc(text, pos);
        if (p)
            text = p;
    }
    for (size_t i = 0; i < sc.n; i++) {
        cJSON *n = jb->big[i].node;
        cJSON_free(n->valuestring);
        n->valuestring = text + jb->big[i].off;
        n->type |= cJSON_IsReference;
    }
    jb->root = root;
    root = NULL;
    jb->buf = text;
    jb->nbig = sc.n;
    rc = 0;
out:
    if (rc) {
        free(jb->big);
        jb->big = NULL;
    }
    cJSON_Delete(root);
    strbuf_release(&small);
    free(sc.s);
    return rc;
}

int jsonbig_parse(struct jsonbig *jb, char **textp, size_t len, size_t min)
{
    char *text = *textp;
    int rc = 0;

    memset(jb, 0, sizeof(*jb));
    *textp = NULL;
    if (!text)
        return err_set(ERR_INVALID, "json: no text");
    len = strnlen(text, len); /* cJSON reads up to the first NUL */
    if (parse_long(jb, text, len, min ? min : JSONBIG_MIN) == 0)
        goto out;
    jb->root = cJSON_Parse(text); /* nothing long, or not as expected: as it is */
    jb->buf = text;
    if (!jb->root)
        rc = err_set(ERR_INVALID, "not valid JSON");
out:
    return rc;
}

void jsonbig_release(struct jsonbig *jb)
{
    cJSON_Delete(jb->root);
    free(jb->buf);
    free(jb->big);
    memset(jb, 0, sizeof(*jb));
}

static size_t live_count(const struct jsonbig *jb)
{
    size_t n = 0;
    for (size_t i = 0; i < jb->nbig; i++)
        n += jb->big[i].node != NULL;
    return n;
}

static long find_big(const struct jsonbig *jb, const cJSON *node)
{
    for (size_t i = 0; i < jb->nbig; i++)
        if (jb->big[i].node == node)
            return (long)i;
    return -1;
}

static void forget(struct jsonbig *jb, size_t i)
{
    jb->big[i].node->valuestring = NULL;
    jb->big[i].node = NULL;
}

/* Move the living long strings to the start of buf, in order. */
static void compact(struct jsonbig *jb)
{
    size_t pos = 0;

    for (size_t i = 0; i < jb->nbig; i++) {
        if (!jb->big[i].node)
            continue;
        if (jb->big[i].off != pos)
            memmove(jb->buf + pos, jb->buf + jb->big[i].off, jb->big[i].len + 1);
        jb->big[i].off = pos;
        jb->big[i].node->valuestring = jb->buf + pos;
        pos += jb->big[i].len + 1;
    }
}

char *jsonbig_take(struct jsonbig *jb, cJSON *node)
{
    long i = find_big(jb, node);
    char *s;

    if (i < 0) {
        if (!cJSON_IsString(node) || !node->valuestring || (node->type & cJSON_IsReference))
            return NULL;
        s = node->valuestring;
        node->valuestring = NULL;
        return s;
    }
    if (live_count(jb) == 1) { /* the buffer becomes the string */
        size_t len = jb->big[i].len;
        if (jb->big[i].off)
            memmove(jb->buf, jb->buf + jb->big[i].off, len + 1);
        s = realloc(jb->buf, len + 1);
        if (!s)
            s = jb->buf;
        jb->buf = NULL;
    } else {
        s = xmalloc(jb->big[i].len + 1);
        memcpy(s, jb->buf + jb->big[i].off, jb->big[i].len + 1);
    }
    forget(jb, (size_t)i);
    return s;
}

/* The long strings of a subtree, in preorder, into idx[] (jb->nbig room). */
static void collect(const struct jsonbig *jb, cJSON *n, int top, size_t *idx, size_t *m)
{
    for (; n; n = top ? NULL : n->next) {
        if (cJSON_IsString(n) && (n->type & cJSON_IsReference)) {
            long i = find_big(jb, n);
            if (i >= 0)
                idx[(*m)++] = (size_t)i;
        }
        if (n->child)
            collect(jb, n->child, 0, idx, m);
    }
}

/* The skeleton of the subtree: node printed with each of its m long
 * strings (idx[]) replaced by a raw mark, then put back.  cJSON_free()
 * it; NULL when cJSON cannot print. */
static char *print_skeleton(const struct jsonbig *jb, cJSON *node, const size_t *idx, size_t m)
{
    static char mark[] = "\x01"; /* cJSON prints a control character escaped: unique */
    char *skel;

    for (size_t k = 0; k < m; k++) {
        cJSON *n = jb->big[idx[k]].node;
        n->type = cJSON_Raw | cJSON_IsReference;
        n->valuestring = mark;
    }
    skel = cJSON_PrintUnformatted(node);
    for (size_t k = 0; k < m; k++) {
        cJSON *n = jb->big[idx[k]].node;
        n->type = cJSON_String | cJSON_IsReference;
        n->valuestring = jb->buf + jb->big[idx[k]].off;
    }
    return skel;
}

/* The printed text in pieces: m + 1 pieces of the skeleton around the
 * marks (off, len), the escaped length of each of the m strings between
 * them (esc), and the whole length. */
struct pieces {
    size_t *off, *len, *esc;
    size_t total;
};

static void pieces_init(struct pieces *pc, const struct jsonbig *jb, const char *skel,
                        const size_t *idx, size_t m)
{
    size_t nseg = 0;

    pc->off = xcalloc(m + 1, sizeof(size_t));
    pc->len = xcalloc(m + 1, sizeof(size_t));
    pc->esc = xcalloc(m, sizeof(size_t));
    pc->total = 0;
    for (size_t i = 0, from = 0;; i++) {
        if (skel[i] == '\x01' || !skel[i]) {
            if (nseg > m)
                abort(); /* impossible: more marks than long strings */
            pc->off[nseg] = from;
            pc->len[nseg++] = i - from;
            from = i + 1;
            if (!skel[i])
                break;
        }
    }
    if (nseg != m + 1)
        abort(); /* impossible: a mark cJSON did not print */
    for (size_t k = 0; k < m; k++) {
        pc->esc[k] = esc_len(jb->buf + jb->big[idx[k]].off, jb->big[idx[k]].len);
        pc->total += pc->esc[k] + pc->len[k];
    }
    pc->total += pc->len[m];
}

static void pieces_release(struct pieces *pc)
{
    free(pc->off);
    free(pc->len);
    free(pc->esc);
}

/* The text built in the buffer itself, when the subtree holds every live
 * long string: the strings at the start, the buffer grown to the text's
 * size, each string escaped backwards to its final place (last first:
 * each only moves right), then the pieces between.  The buffer becomes
 * the result. */
static char *assemble_in_place(struct jsonbig *jb, const char *skel, const size_t *idx, size_t m,
                               const struct pieces *pc)
{
    size_t end = pc->total;
    char *p;

    compact(jb);
    p = xrealloc(jb->buf, pc->total + 1);
    jb->buf = p;
    end -= pc->len[m];
    for (size_t k = m; k-- > 0;) {
        esc_back(p + end, p + jb->big[idx[k]].off, jb->big[idx[k]].len);
        end -= pc->esc[k] + pc->len[k];
    }
    for (size_t k = 0, w = 0; k <= m; k++) {
        memcpy(p + w, skel + pc->off[k], pc->len[k]);
        w += pc->len[k] + (k < m ? pc->esc[k] : 0);
    }
    p[pc->total] = '\0';
    jb->buf = NULL;
    return p;
}

/* The text in a new allocation, the buffer left as it is. */
static char *assemble_copy(const struct jsonbig *jb, const char *skel, const size_t *idx, size_t m,
                           const struct pieces *pc)
{
    char *out = xmalloc(pc->total + 1);
    char *w = out;

    for (size_t k = 0; k <= m; k++) {
        memcpy(w, skel + pc->off[k], pc->len[k]);
        w += pc->len[k];
        if (k < m)
            w = esc_fwd(w, jb->buf + jb->big[idx[k]].off, jb->big[idx[k]].len);
    }
    *w = '\0';
    return out;
}

char *jsonbig_print_take(struct jsonbig *jb, cJSON *node)
{
    size_t *idx = NULL, m = 0;
    struct pieces pc = {0};
    char *skel = NULL, *out = NULL;

    if (!node)
        return NULL;
    if (jb->nbig) {
        idx = xcalloc(jb->nbig, sizeof(*idx));
        collect(jb, node, 1, idx, &m);
    }
    if (m == 0) {
        out = cJSON_PrintUnformatted(node);
        goto out;
    }
    skel = print_skeleton(jb, node, idx, m);
    if (!skel)
        goto out;
    pieces_init(&pc, jb, skel, idx, m);
    if (live_count(jb) == m)
        out = assemble_in_place(jb, skel, idx, m, &pc);
    else
        out = assemble_copy(jb, skel, idx, m, &pc);
    for (size_t k = 0; k < m; k++)
        forget(jb, idx[k]);
out:
    cJSON_free(skel);
    free(idx);
    pieces_release(&pc);
    return out;
}
