#!/usr/bin/env bash
# The architecture's rules (docs/architecture.md): SQLite only in
# store/, includes point down the layers, and no production function over
# 100 lines, a complexity of 30 or 8 parameters.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
out=$(bash "$ROOT/scripts/layers" 2>&1) || fail "layers: $out"
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
done_tests
