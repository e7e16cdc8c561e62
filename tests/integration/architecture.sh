#!/usr/bin/env bash
# The architecture's rules (docs/architecture.md): SQLite only in
# store/, includes point down the layers, and no production function over
# 100 lines or a complexity of 30.
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
done_tests
