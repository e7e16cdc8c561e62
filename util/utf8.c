/* utf8.c - UTF-8 texts: made valid, capped (see utf8.h). */
#include "util/utf8.h"

#include <stdio.h>
#include <string.h>

#include "util/xalloc.h"

int utf8_sanitize(strbuf *out, const char *s, size_t len, size_t *replaced)
{
    size_t i = 0, run = 0, bad = 0;
    int rc;

    if (replaced)
        *replaced = 0;
    while (i < len) {
        size_t k = utf8_valid_len(s + i, len - i);
        if (k) {
            i += k;
            continue;
        }
        if ((rc = strbuf_add(out, s + run, i - run)) != 0 ||
            (rc = strbuf_add(out, "\xEF\xBF\xBD", 3)) != 0)
            return rc;
        i++;
        run = i;
        bad++;
        if (replaced)
            *replaced = bad;
    }
    return strbuf_add(out, s + run, len - run);
}

char *utf8_cap_dup(const char *s, size_t len, size_t max)
{
    static const char fmt[] = " \xE2\x80\xA6 [cut by goald: %zu bytes, kept %zu]";
    char note[128];
    size_t kept;
    int n;
    char *out;

    if (len <= max)
        return xstrndup(s, len);
    /* the note fits within max too (kept has no more digits than max): a
     * capped text is never cut again */
    n = snprintf(note, sizeof(note), fmt, len, max);
    kept = max > (size_t)n ? utf8_cut_back(s, max - (size_t)n) : 0;
    n = snprintf(note, sizeof(note), fmt, len, kept);
    out = xmalloc(kept + (size_t)n + 1);
    memcpy(out, s, kept);
    memcpy(out + kept, note, (size_t)n + 1);
    return out;
}
