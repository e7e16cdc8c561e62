#!/usr/bin/env bash
# docs/getting-started.md, run as written.  The blocks marked
# `<!-- run -->` are taken from the guide in order (only build/goald, the
# repository path the guide tells the reader to choose, the goal id it
# prints and the model server's address are substituted) and run from a
# fresh state folder: a new HOME and XDG_STATE_HOME, no GOALD_* variable.
# Section 2 before any model is set up: `daemon --once` exits non-zero
# within 5 s having started at most one job and says how to fix it.  Then
# section 3's local server (the fake OpenAI-compatible server standing in)
# and the guide's "run the daemon again": the goal completes.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

unset GOALD_DB
for v in $(env | sed -n 's/^\(GOALD_[A-Z_]*\)=.*/\1/p'); do
    case "$v" in GOALD_BIN|GOALD_BUILD_DIR|GOALD_SOURCE_DIR) ;; *) unset "$v" ;; esac
done
export HOME="$T/fresh-home" XDG_STATE_HOME="$T/fresh-home/.local/state"
mkdir -p "$HOME"
W="$T/src"
mkdir -p "$W/build"
ln -s "$GOALD_BIN" "$W/build/goald"

# the blocks, as the guide has them
awk '/^<!-- run -->$/ { want = 1; next }
     want && /^```/ { if (inblock) { inblock = 0; want = 0; print "#--end--" } else { inblock = 1; lang = substr($0, 4) }; next }
     inblock { print }' "$GOALD_SOURCE_DIR/docs/getting-started.md" >"$T/guide.txt"
awk -v out="$T/block" 'BEGIN { n = 1 } /^#--end--$/ { n++; next } { print > (out n) }' "$T/guide.txt"
n=$(grep -c '^#--end--$' "$T/guide.txt" || true)
expect_eq "$n" 4 "blocks marked <!-- run --> in docs/getting-started.md"
jq -e . "$T/block1" >/dev/null || fail "the guide's goal is not JSON: $(cat "$T/block1")"; ok
grep -q '^build/goald daemon --once' "$T/block2" || fail "section 2 runs no daemon: $(cat "$T/block2")"; ok
grep -q 'GOALD_LLM_BASE_URL=' "$T/block4" || fail "the model block sets no GOALD_LLM_BASE_URL"; ok

# the repository the reader chose (the guide's goal wants `make test`)
guide_repo=$(jq -r .repo "$T/block1")
REPO="$T/tool"
make_repo "$REPO"
cp "$GOALD_SOURCE_DIR/share/demo-project/add.sh" "$GOALD_SOURCE_DIR/share/demo-project/test.sh" "$REPO/"
printf 'test:\n\tsh test.sh\n' >"$REPO/Makefile"
git -C "$REPO" add -A && git -C "$REPO" commit -q -m "a tool whose test fails"
sed "s#$guide_repo#$REPO#" "$T/block1" >"$W/goal.json"

# run_block N: the block's lines, one at a time, in this shell (its exports
# stay), from the source folder; ID is the goal id submit printed
run_block() {
    local line
    while IFS= read -r line; do
        line=${line//ID/${GID:-ID}}
        case "$line" in ''|'#'*) continue ;; esac
        echo "\$ $line" >>"$T/transcript"
        local start=$(date +%s%N)
        set +e
        (cd "$W" && eval "$line") >"$T/.out" 2>"$T/.err"
        RC=$?
        case "$line" in export\ *) (cd "$W" && eval "$line"); eval "$line" ;; esac
        set -e
        MS=$(( ($(date +%s%N) - start) / 1000000 ))
        OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
        cat "$T/.out" "$T/.err" >>"$T/transcript"
        step_check "$line"
    done <"$T/block$1"
}

# --- section 2 before any model -------------------------------------------
step_check() {
    case "$1" in
    *submit*) expect_rc 0 "$1"; GID=$(printf '%s\n' "$OUT" | tail -n1) ;;
    *"daemon --once"*)
        [ "$RC" != 0 ] || fail "$1 with no model: exit 0; stderr: $ERR"; ok
        expect_rc 3 "$1 with no model"
        [ "$MS" -lt 5000 ] || fail "$1 took $MS ms"; ok
        expect_err "no model is configured" "$1 says why"
        expect_err "goald escalations" "$1 says where to look"
        DB="$XDG_STATE_HOME/goald/goald.db"
        [ -f "$DB" ] || fail "no database at $DB: $(find "$T/fresh-home" | head)"; ok
        runs=$(sqlite3 "$DB" "SELECT count(*) FROM runs")
        [ "$runs" -le 1 ] || fail "$1 started $runs jobs"; ok
        q=$(sqlite3 "$DB" "SELECT json_extract(packet, '\$.minimal_question') FROM escalations WHERE status = 'open'")
        case "$q" in *"GOALD_LLM_BASE_URL"*"goald doctor --llm"*) ok ;; *) fail "the escalation does not name the fix: $q" ;; esac
        ;;
    *report*) expect_rc 0 "$1"; expect_out "blocked" "the report before a model" ;;
    *) fail "unexpected line in section 2: $1" ;;
    esac
}
run_block 2

# --- section 3: the local server (the fake standing in) ------------------------
{ echo '{"content": "pong", "usage": {"input": 5, "output": 1}}'; cat "$GOALD_SOURCE_DIR/tests/fixtures/fake/demo.jsonl"; } >"$T/script.jsonl"
start_fake_llm llm openai "$T/script.jsonl"
sed -i "s#http://127.0.0.1:11434/v1#$FAKE_URL#" "$T/block4"
step_check() {
    case "$1" in
    export*) expect_rc 0 "$1" ;;
    *"doctor --llm"*)
        expect_out "round trip" "$1"
        case "$OUT" in *"round trip failed"*) fail "$1: $OUT" ;; *) ok ;; esac ;;
    *) fail "unexpected line in section 3: $1" ;;
    esac
}
run_block 4
expect_eq "$GOALD_LLM_BASE_URL" "$FAKE_URL" "the guide's GOALD_LLM_BASE_URL"

# --- back to section 2: run the daemon again ------------------------------------
step_check() {
    case "$1" in
    *"daemon --once"*) expect_rc 0 "$1 with a model" ;;
    *report*) expect_rc 0 "$1"; expect_out "completed" "the report" ;;
    *) fail "unexpected line: $1" ;;
    esac
}
run_block 3
DB="$XDG_STATE_HOME/goald/goald.db"
expect_eq "$(sqlite3 "$DB" "SELECT status FROM goals WHERE id = '$GID'")" completed "the guide's goal"
expect_eq "$(sqlite3 "$DB" "SELECT status || ' ' || resolution FROM escalations")" "resolved system" \
    "the escalation of the missing model"
br=$(sqlite3 "$DB" "SELECT branch FROM goals WHERE id = '$GID'")
git -C "$REPO" rev-parse -q --verify "$br" >/dev/null || fail "no branch $br in the repository"; ok
done_tests
