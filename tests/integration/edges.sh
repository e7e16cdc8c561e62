#!/usr/bin/env bash
# The edges check (scripts/edges): no production .c file throws away what
# snprintf returns unless the statement says why a cut is harmless.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# this checkout: zero unmarked discards
out=$(bash "$ROOT/scripts/edges" 2>&1) || fail "edges: $out"
ok

mkdir -p "$T/x"
# a discarded snprintf fails, and is named with its line
cat >"$T/x/bad.c" <<'C'
#include <stdio.h>
void f(char *p, size_t n, const char *dir)
{
    snprintf(p, n, "%s/x", dir);
}
C
out=$(bash "$ROOT/scripts/edges" "$T/x/bad.c" 2>&1) && fail "edges passed a discarded snprintf: $out"
case "$out" in *"$T/x/bad.c:4: snprintf(p, n, \"%s/x\", dir);"*) ;; *) fail "edges: the line not named: $out" ;; esac
ok
# so do a (void) cast, one after if/else, and one in a case
cat >"$T/x/more.c" <<'C'
#include <stdio.h>
void g(char *p, size_t n, int k)
{
    (void)snprintf(p, n, "%d", k);
    if (k)
        snprintf(p, n, "a");
    else snprintf(p, n, "b");
    switch (k) {
    case 1: snprintf(p, n, "c"); break;
    }
}
C
out=$(bash "$ROOT/scripts/edges" "$T/x/more.c" 2>&1) && fail "edges passed discards: $out"
for l in 4 6 7 9; do
    case "$out" in *"$T/x/more.c:$l:"*) ;; *) fail "edges: line $l not named: $out" ;; esac
done
ok
# a marker with its reason passes, on the line or the line above; results
# used (checked, assigned, inside a condition, a cast in an expression),
# and snprintf in comments and strings, pass
cat >"$T/x/good.c" <<'C'
#include <stdio.h>
/* snprintf(p, n, "in a comment"); */
int h(char *p, size_t n, int k)
{
    const char *s = "snprintf(p, n, \"in a string\");";
    size_t w;
    snprintf(p, n, "%d", k); /* truncation: ok, a number that always fits */
    /* truncation: ok, a message that may be cut */
    snprintf(p, n, "a message %s",
             s);
    if (snprintf(p, n, "%s/x", s) >= (int)n ||
        snprintf(p, n, "%s/y", s) >= (int)n)
        return -1;
    w = (size_t)snprintf(p, n, "%d", k);
    return (int)w + snprintf(p, n, "z");
}
C
out=$(bash "$ROOT/scripts/edges" "$T/x/good.c" 2>&1) || fail "edges failed marked or checked calls: $out"
ok
# a marker without a reason is no marker
printf '#include <stdio.h>\nvoid m(char *p, size_t n)\n{\n    snprintf(p, n, "x"); /* truncation: ok, */\n}\n' >"$T/x/noreason.c"
out=$(bash "$ROOT/scripts/edges" "$T/x/noreason.c" 2>&1) && fail "edges passed a marker without a reason: $out"
case "$out" in *"noreason.c:4:"*) ;; *) fail "edges: the unreasoned line not named: $out" ;; esac
ok
# and a planted discard in a copy of a production file fails the check
cp "$ROOT/util/fsutil.c" "$T/x/fsutil.c"
printf 'void planted(char *p, size_t n)\n{\n    snprintf(p, n, "%%s", "x");\n}\n' >>"$T/x/fsutil.c"
out=$(bash "$ROOT/scripts/edges" "$T/x/fsutil.c" 2>&1) && fail "edges passed a planted discard: $out"
case "$out" in *"fsutil.c:"*": snprintf(p, n, \"%s\", \"x\");"*) ;; *) fail "edges: the planted line not named: $out" ;; esac
ok
done_tests
