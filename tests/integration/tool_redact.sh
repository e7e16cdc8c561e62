#!/usr/bin/env bash
# Redaction that does not corrupt code (goald tool read/grep/edit/write):
# ordinary code assigning short or word-like values to a secret-sounding
# name comes back exactly as the file holds it; a real secret is masked and
# the output says so in one line; edit and write refuse the mask.
. "$(dirname "$0")/lib.sh"

W="$T/wt"
mkdir -p "$W"
cat >"$W/code.py" <<'EOF'
def bump(token = "rc"):
    password_field = "password"
    api_key = "abc"
    secret_name = "db-password"
    TOKEN_TYPE = "bearer"
    password_min_length = 12
    return token
EOF
run "$G" tool read --root "$W" --args '{"path":"code.py"}'
expect_rc 0
expect_eq "$(jqo .output)" "$(cat "$W/code.py")" "read of ordinary code"
expect_eq "$(jqo '.meta | has("redactions")')" false
run "$G" tool grep --root "$W" --args '{"pattern":"token|password|api_key|secret","ignore_case":true}'
expect_out 'code.py:1: def bump(token = \"rc\"):'
expect_out 'code.py:2:     password_field = \"password\"'
expect_out 'code.py:3:     api_key = \"abc\"'
expect_out 'code.py:4:     secret_name = \"db-password\"'
expect_out 'code.py:5:     TOKEN_TYPE = \"bearer\"'
case "$OUT" in *REDACTED*) fail "grep masked ordinary code: $OUT" ;; esac; ok

# a line copied from read into edit works
run "$G" tool edit --root "$W" --args '{"path":"code.py","old_text":"def bump(token = \"rc\"):","new_text":"def bump(token = \"final\"):"}'
expect_eq "$(jqo .ok)" true "edit of a copied line"
grep -qF 'def bump(token = "final"):' "$W/code.py" || fail "the edit did not land"; ok

# real secrets are masked, and the output says how many
printf 'api_key = "w3arg9ThU6ZlSPxnVWPeyn4l"\naws = AKIAINF4FO2XW4EXAH9Q\nname = "x"\n' >"$W/cfg.ini"
run "$G" tool read --root "$W" --args '{"path":"cfg.ini"}'
expect_eq "$(jqo .output)" 'api_key = "***REDACTED***"
aws = ***REDACTED***
name = "x"
[goald: 2 secrets masked in this output as ***REDACTED***; the files hold the real text]'
expect_eq "$(jqo .meta.redactions)" 2
case "$OUT" in *w3arg9ThU6*|*AKIAINF4*) fail "a secret leaked: $OUT" ;; esac; ok

# edit and write refuse the mask
before=$(sha256sum "$W/cfg.ini")
run "$G" tool edit --root "$W" --args '{"path":"cfg.ini","old_text":"name = \"x\"","new_text":"api_key = \"***REDACTED***\""}'
expect_eq "$(jqo .error_class)" validation
expect_out 'new_text holds ***REDACTED***, the mask goald puts over a secret'
run "$G" tool edit --root "$W" --args '{"path":"cfg.ini","old_text":"api_key = \"***REDACTED***\"","new_text":"api_key = \"new\""}'
expect_eq "$(jqo .error_class)" not_found
expect_out 'the file has the real text there'
run "$G" tool write --root "$W" --args '{"path":"cfg.ini","content":"api_key = \"***REDACTED***\"\n"}'
expect_eq "$(jqo .error_class)" validation
expect_out 'content holds ***REDACTED***'
expect_eq "$(sha256sum "$W/cfg.ini")" "$before" "cfg.ini unchanged"
run "$G" tool write --root "$W" --args '{"path":"new.txt","content":"***REDACTED***"}'
[ ! -e "$W/new.txt" ] || fail "write created a file holding the mask"; ok

done_tests
