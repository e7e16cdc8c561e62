#!/usr/bin/env bash
# A private key is redacted in every slice of it: a key body shown without
# its BEGIN line (the read tool with an offset, `tail`, `sed -n`, `cat -n`
# cut by `tail`) must reach the model as ***REDACTED***, with an END line
# after it or neither line; ordinary code and data holding base64 come out
# of the same tools unchanged.  Through the real binary (`goald tool`),
# the path every tool result takes to the model.
. "$(dirname "$0")/../integration/lib.sh"

W="$T/wt"
mkdir -p "$W"
# a fake RSA key (random bytes, PEM-wrapped at 64) and an OpenSSH one (70)
{
    echo "# deploy key, do not commit"
    echo "-----BEGIN RSA PRIVATE KEY-----"
    head -c 1100 /dev/urandom | base64 -w 64
    echo "-----END RSA PRIVATE KEY-----"
    echo "after-the-key"
} >"$W/key.pem"
{
    echo "-----BEGIN OPENSSH PRIVATE KEY-----"
    head -c 700 /dev/urandom | base64 -w 70
    echo "-----END OPENSSH PRIVATE KEY-----"
} >"$W/id_ed"
# every body line's middle: none may reach the output
grep -hv -e '^-----' -e '^#' -e after-the-key "$W/key.pem" "$W/id_ed" | cut -c 5-28 >"$T/body"
[ "$(wc -l <"$T/body")" -ge 20 ] || fail "the keys have too few lines"; ok

# ordinary code and data with base64 in it
L=$(head -c 48 /dev/urandom | base64 -w 0)
cat >"$W/code.go" <<EOF
package assets

// the logo, base64
const logo = "" +
	"$L" +
	"$L" +
	"$L" +
	"$L"

var icon = []byte("data:image/png;base64,$L$L$L")
EOF
head -c 600 /dev/urandom | base64 >"$W/blob.b64" # wrapped at 76
printf '%s\n' "$L$L$L" >>"$W/blob.b64"

# check NAME JSON: the tool's output holds no body line and the mark
check_masked() {
    local what=$1 out
    out=$(jq -r .output <<<"$2")
    [ -n "$out" ] || fail "$what: no output: $2"
    if grep -qF -f "$T/body" <<<"$out"; then
        fail "$what: a key body line reached the output: $out"
    fi
    grep -qF '***REDACTED***' <<<"$out" || fail "$what: nothing was redacted: $out"
    ok
}
tool() { "$G" tool "$1" --root "$W" --args "$2"; }

# the read tool from line 3: the body and its END line, no BEGIN
out=$(tool read '{"path": "key.pem", "offset": 3}') || fail "read: $out"
check_masked "read offset=3" "$out"
jq -r .output <<<"$out" | grep -q after-the-key || fail "read: the text after the key is gone"; ok
# from line 8 for 5 lines: a body slice with neither line
out=$(tool read '{"path": "key.pem", "offset": 8, "limit": 5}') || fail "read: $out"
check_masked "read offset=8 limit=5" "$out"
out=$(tool read '{"path": "id_ed", "offset": 2}') || fail "read: $out"
check_masked "read id_ed offset=2" "$out"
# bash: tail, sed -n, cat -n | tail, a body slice in the middle
out=$(tool bash '{"command": "tail -n 8 key.pem"}') || fail "bash: $out"
check_masked "tail -n 8" "$out"
out=$(tool bash '{"command": "sed -n 4,12p key.pem"}') || fail "bash: $out"
check_masked "sed -n 4,12p" "$out"
out=$(tool bash '{"command": "cat -n key.pem | tail -n 9"}') || fail "bash: $out"
check_masked "cat -n | tail" "$out"
out=$(tool bash '{"command": "tail -n 5 id_ed"}') || fail "bash: $out"
check_masked "tail id_ed" "$out"

# ordinary base64 stays as it is
for f in code.go blob.b64; do
    out=$(tool read "{\"path\": \"$f\"}") || fail "read $f: $out"
    expect_eq "$(jq -r .output <<<"$out")" "$(cat "$W/$f")" "read $f is unchanged"
    out=$(tool bash "{\"command\": \"cat $f\"}") || fail "bash cat $f: $out"
    expect_eq "$(jq -r .output <<<"$out")" "$(cat "$W/$f")" "cat $f is unchanged"
done
done_tests
