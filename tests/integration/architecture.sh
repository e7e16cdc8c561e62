#!/usr/bin/env bash
# The architecture's rules (docs/architecture.md): SQLite only in
# store/, includes point down the layers and form no cycle inside a
# folder, no production function over 100 lines, a complexity of 30 or 8
# parameters, and an entity's columns written once (scripts/columns).
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$(bash "$ROOT/scripts/layers" 2>&1) || fail "layers: $out"
case "$out" in *"every include points down, no include cycle"*) ;; *) fail "layers: no cycle check: $out" ;; esac
ok
# the cycle check can fail: in a copy of the tree, three new modules
# whose includes go round (a.h -> b.h, b.c -> c.h, c.c -> a.h); a module's
# x_internal.h is the module's own (d.c -> d_internal.h -> d.h passes)
mkdir -p "$T/tree"
cp -r "$ROOT/lifecycle" "$ROOT/util" "$T/tree/"
echo '#include "lifecycle/cyc_d_internal.h"' >"$T/tree/lifecycle/cyc_d.c"
echo '#include "lifecycle/cyc_d.h"' >"$T/tree/lifecycle/cyc_d_internal.h"
echo '#include "lifecycle/cyc_b.h"' >"$T/tree/lifecycle/cyc_a.h"
echo '#include "lifecycle/cyc_c.h"' >"$T/tree/lifecycle/cyc_b.c"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) || fail "layers: the copy: $out"
echo '#include "lifecycle/cyc_a.h"' >"$T/tree/lifecycle/cyc_c.c"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) && fail "layers passed an include cycle: $out"
case "$out" in
*"layers: include cycle: lifecycle/cyc_a -> lifecycle/cyc_b -> lifecycle/cyc_c -> lifecycle/cyc_a"*) ;;
*) fail "layers: the cycle not named: $out" ;;
esac
case "$out" in *"lifecycle/cyc_c.c includes lifecycle/cyc_a.h"*) ;; *) fail "layers: the include not named: $out" ;; esac
ok
# no folder has a cycle let through: in util/, err.h including strbuf.h
# (strbuf.h includes err.h) fails
rm "$T/tree/lifecycle/cyc_c.c"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) || fail "layers: the copy restored: $out"
cp "$T/tree/util/err.h" "$T/err.h"
echo '#include "util/strbuf.h"' >>"$T/tree/util/err.h"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) && fail "layers passed a cycle in util/: $out"
case "$out" in *"layers: include cycle: util/err -> util/strbuf -> util/err"*) ;; *) fail "layers: util's cycle not named: $out" ;; esac
cp "$T/err.h" "$T/tree/util/err.h"
ok
# and the cycles once let through outside lifecycle/ fail again when put
# back: strbuf.c cutting with utf8.h (whose texts are strbufs), the
# store's statements (internal.h) naming store.h, sandbox's shared
# declarations (internal.h) including sandbox.h
cp -r "$ROOT/store" "$ROOT/sandbox" "$T/tree/"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) || fail "layers: the copy with store/ and sandbox/: $out"
sed -i 's|#include "util/utf8char.h"|#include "util/utf8.h"|' "$T/tree/util/strbuf.c"
echo '#include "store/store.h"' >>"$T/tree/store/internal.h"
echo '#include "sandbox/sandbox.h"' >>"$T/tree/sandbox/internal.h"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) && fail "layers passed the old cycles: $out"
case "$out" in *"layers: include cycle: util/strbuf -> util/utf8 -> util/strbuf"*) ;; *) fail "layers: strbuf <-> utf8 not named: $out" ;; esac
case "$out" in *"layers: include cycle: store/backend -> store/internal -> store/store -> store/backend"*) ;; *) fail "layers: store's cycle not named: $out" ;; esac
case "$out" in *"layers: include cycle: sandbox/internal -> sandbox/sandbox -> sandbox/internal"*) ;; *) fail "layers: sandbox's cycle not named: $out" ;; esac
ok
# one out-of-memory policy: memory comes from util/xalloc.h; a planted
# malloc (its result checked by hand) fails, one in a comment does not
cp "$ROOT/util/strbuf.c" "$T/tree/util/strbuf.c"
cp "$ROOT/store/internal.h" "$T/tree/store/internal.h"
cp "$ROOT/sandbox/internal.h" "$T/tree/sandbox/internal.h"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) || fail "layers: the copy again: $out"
printf '/* not malloc(3) but xmalloc */\nint oom_planted(void);\n' >>"$T/tree/util/err.c"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) || fail "layers: a comment read as code: $out"
printf 'static char *planted(void)\n{\n    char *p = malloc(4);\n    return p ? p : 0;\n}\n' >>"$T/tree/util/err.c"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) && fail "layers passed a malloc outside xalloc: $out"
case "$out" in *"util/err.c: allocates without util/xalloc.h"*) ;; *) fail "layers: the malloc not named: $out" ;; esac
case "$out" in *"char *p = malloc(4);"*) ;; *) fail "layers: the line not shown: $out" ;; esac
ok
# and an xcheck() around a cJSON call (cJSON allocates through xalloc: a
# NULL from it is a NULL argument, not memory)
cp "$ROOT/util/err.c" "$T/tree/util/err.c"
printf 'static void *wrapped(void)\n{\n    return xcheck(cJSON_CreateObject());\n}\n' >>"$T/tree/util/err.c"
out=$(bash "$ROOT/scripts/layers" "$T/tree" 2>&1) && fail "layers passed an xcheck around cJSON: $out"
case "$out" in *"util/err.c: xcheck() around a cJSON call"*) ;; *) fail "layers: the xcheck not named: $out" ;; esac
cp "$ROOT/util/err.c" "$T/tree/util/err.c"
ok
out=$(bash "$ROOT/scripts/complexity" 2>&1) || fail "$out"
ok
# the check can fail: a planted function over the limits is found
mkdir -p "$T/x"
{ echo 'int big(int a) {'; for i in $(seq 1 120); do echo "    if (a == $i) return $i;"; done; echo '    return 0; }'; } >"$T/x/big.c"
bash "$ROOT/scripts/complexity" "$T/x/big.c" >/dev/null 2>&1 && fail "complexity passed a 120-branch function"
ok
# and a function of nine parameters (the limit is 8) is found
printf 'int wide(int a, int b, int c, int d, int e, int f, int g, int h,\n         int (*fn)(int x, int y))\n{\n    return fn(a + b + c + d, e + f + g + h);\n}\n' >"$T/x/wide.c"
out=$(bash "$ROOT/scripts/complexity" "$T/x/wide.c" 2>&1) && fail "complexity passed a function of nine parameters"
case "$out" in *"9  $T/x/wide.c(1): wide"*) ;; *) fail "complexity: wide() not named: $out" ;; esac
ok
# eight are fine
printf 'int narrow(int a, int b, int c, int d, int e, int f, int g, int (*fn)(int x, int y))\n{\n    return fn(a + b + c + d, e + f + g);\n}\n' >"$T/x/narrow.c"
out=$(bash "$ROOT/scripts/complexity" "$T/x/narrow.c" 2>&1) || fail "complexity failed a function of eight parameters: $out"
ok
# and a file of 801 lines, each function small: split it by concern
{ for i in $(seq 1 267); do printf 'int f%d(void)\n{ return %d; }\n\n' "$i" "$i"; done; } >"$T/x/long.c"
out=$(bash "$ROOT/scripts/complexity" "$T/x/long.c" 2>&1) && fail "complexity passed a file of $(wc -l <"$T/x/long.c") lines"
case "$out" in *"801  $T/x/long.c"*) ;; *) fail "complexity: the long file not named: $out" ;; esac
ok
out=$(bash "$ROOT/scripts/columns" 2>&1) || fail "$out"
ok
# the columns check can fail: a row of work_items written again by hand, a
# goal's STORE_FIELD entry and an INSERT INTO goals listing its columns
cp -r "$ROOT/store" "$T/store"
echo 'static const char again[] = "SELECT id, goal_id, key, title, description, type,"
    " status, priority FROM work_items WHERE id = ?";' >>"$T/store/item.c"
out=$(bash "$ROOT/scripts/columns" "$T/store" 2>&1) && fail "columns passed a hand-written work_items row"
case "$out" in *"store/item.c: a list of its columns"*) ;; *) fail "columns: the list not named: $out" ;; esac
cp "$ROOT/store/item.c" "$T/store/item.c"
echo 'static const struct store_field f[] = {STORE_FIELD(struct goal, title, RAW, 0)};' >>"$T/store/run.c"
echo 'static const char ins[] = "INSERT INTO goals(id, title) VALUES (?, ?)";' >>"$T/store/event.c"
out=$(bash "$ROOT/scripts/columns" "$T/store" 2>&1) && fail "columns passed a goal's column written again"
case "$out" in *"run.c: STORE_FIELD of goal.title"*) ;; *) fail "columns: the field not named: $out" ;; esac
case "$out" in *"event.c: INSERT INTO goals"*) ;; *) fail "columns: the INSERT not named: $out" ;; esac
ok
done_tests
