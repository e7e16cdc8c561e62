#!/bin/sh
# test.sh: the project's tests; exits non-zero when one fails
fail=0
check() {
    got=$(sh ./add.sh "$1" "$2")
    if [ "$got" = "$3" ]; then echo "ok - add $1 $2 = $3"; else echo "not ok - add $1 $2: expected $3, got $got"; fail=1; fi
}
check 2 3 5
check 10 -4 6
check 0 0 0
exit $fail
