#!/usr/bin/env bash
# Help and docs agree:
#   - no help line is one word left alone at the end of a wrapped text;
#   - docs/cli.md's "Commands" are exactly those `goald --help` shows, and
#     the others are under "Internal commands" (`job`: the daemon runs it);
#   - `daemon --once`'s exit codes: stated in its help, once in
#     docs/operations.md (with the same codes), and named in docs/cli.md's
#     exit codes; no doc says it only "exits 0";
#   - getting-started mentions `demo --keep`; the demo prints no path in
#     the folder it removes, and says it removed it.
. "$(dirname "$0")/lib.sh"

SRC="$GOALD_SOURCE_DIR"
# a line of one word after a line of text, indented as a continuation
orphans() { awk -v c="$1" 'prev != "" && /^ +[^ ]+$/ { print c ": [" prev "] / [" $0 "]" } { prev = $0 }'; }

# --- every help text
run "$G" --help
expect_rc 0 "goald --help"
help=$OUT
bad=$(printf '%s\n' "$help" | orphans "goald --help")
cmds=$(sed -n 's/^### `goald \([a-z][a-z ]*[a-z]\)\( [^`]*\)\?`$/\1/p' "$SRC/docs/cli.md")
[ "$(printf '%s\n' "$cmds" | grep -c .)" -ge 20 ] || fail "too few commands in docs/cli.md: $cmds"
while read -r cmd; do
    # shellcheck disable=SC2086
    bad="$bad$("$G" $cmd --help | orphans "$cmd --help")"
done <<<"$cmds"
[ -z "$bad" ] || fail "help lines with one word alone: $bad"; ok

# --- docs/cli.md: the commands goald --help shows, then the internal ones
listed=$(printf '%s\n' "$help" | awk '/^commands:/ {on=1; next} /^$/ {on=0}
           on && /^  [a-z]/ { n = ""; split(substr($0, 3, 28), w, " ")
                              for (i = 1; i in w; i++) if (w[i] ~ /^[a-z]+$/) n = n (n ? " " : "") w[i]
                              print n }')
public=$(awk '/^## Commands$/ {on=1; next} /^## / {on=0} on' "$SRC/docs/cli.md" |
         sed -n 's/^### `goald \([a-z][a-z ]*[a-z]\)\( [^`]*\)\?`$/\1/p')
expect_eq "$public" "$listed" "docs/cli.md's Commands against goald --help"
internal=$(awk '/^## Internal commands$/ {on=1; next} /^## / {on=0} on' "$SRC/docs/cli.md" |
           sed -n 's/^### `goald \([a-z][a-z ]*[a-z]\)\( [^`]*\)\?`$/\1/p' | tr '\n' ' ')
case " $internal" in *" job "*) ok ;; *) fail "docs/cli.md: job is not under Internal commands: [$internal]" ;; esac
case "$help" in *"  job RUN_ID"*) fail "goald --help lists the internal job command" ;; esac
ok

# --- daemon --once's exit codes
run "$G" daemon --help
once=$(printf '%s\n' "$OUT" | tr '\n' ' ')
case "$once" in *"exits: 0 all work finished; 3 work left waiting on a human"*"1 the daemon failed"*) ok ;;
*) fail "daemon --help does not state --once's exit codes: $OUT" ;; esac
ops=$(tr '\n' ' ' <"$SRC/docs/operations.md" | tr -s ' ')
[ "$(printf '%s' "$ops" | grep -Eo 'daemon --once`[^.]{0,20} exits [0-9]' | wc -l)" = 1 ] ||
    fail "docs/operations.md states daemon --once's exit codes other than once"
case "$ops" in *"exits 0 when all work finished, 3 when work is left waiting on a human"*"1 when the daemon itself failed"*) ok ;;
*) fail "docs/operations.md: daemon --once's exit codes differ from its help" ;; esac
for f in "$SRC"/docs/*.md "$SRC/README.md"; do
    if tr '\n' ' ' <"$f" | tr -s ' ' | grep -Eq 'daemon --once[^.]*exits 0\.'; then
        fail "$f says daemon --once exits 0, without its other codes"
    fi
done
ok
exit_line=$(awk '/^- Exit codes:/ {on=1} on && /^$/ {exit} on' "$SRC/docs/cli.md" | tr '\n' ' ')
case "$exit_line" in *'`daemon --once`'*) ok ;; *) fail "docs/cli.md's exit codes leave out daemon --once: $exit_line" ;; esac
if grep -q 'docs/cli.md, "daemon --once exit codes"' "$SRC"/docs/*.md; then
    fail "a doc points to a section docs/cli.md does not have"
fi
ok

# --- demo --keep in getting-started; the demo names no path it removed
grep -q 'demo --keep' "$SRC/docs/getting-started.md" || fail "docs/getting-started.md does not mention demo --keep"; ok
run env -u GOALD_LLM_SCRIPT TMPDIR="$T" "$G" demo
expect_rc 0 "goald demo"
dir=$(printf '%s\n' "$OUT" | sed -n 's/^goald demo in //p')
[ -n "$dir" ] && [ ! -e "$dir" ] || fail "the demo left [$dir] behind"; ok
own=$(printf '%s\n' "$OUT" | grep -E '^(  project|  model|branch|see|kept) ' || true)
case "$own" in *"$dir"*) fail "the demo prints paths in the folder it removed: $own" ;; esac
ok
expect_eq "$(printf '%s\n' "$OUT" | tail -n1)" "removed  the demo's folder (goald demo --keep keeps it)" "the demo's last line"
run env -u GOALD_LLM_SCRIPT TMPDIR="$T" "$G" demo --keep
expect_rc 0 "goald demo --keep"
dir=$(printf '%s\n' "$OUT" | sed -n 's/^goald demo in //p')
expect_out "  project   $dir/project"
expect_out "kept     $dir"
[ -d "$dir/project/.git" ] || fail "demo --keep did not keep $dir/project"; ok
done_tests
