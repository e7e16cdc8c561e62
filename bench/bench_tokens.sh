#!/usr/bin/env bash
# The tokens bench: a reference goal of three items run by the real binary
# against tests/fakes/fake_llm answering "usage": "auto" (input = the
# prompt's bytes / 4; cached = the prefix it shares byte for byte with the
# run's previous prompt, / 4, as a provider's automatic prompt cache
# counts it; output = the reply's bytes / 4), then bench_tokens on the
# fake's request log: calls, input, cached and output tokens per stage, and
# the cacheable share of the execute runs' input tokens.
#
# The reference project is a copy of goald's own util/ sources (real C of
# 1.5 to 13 KiB a file) with a test script; the model reads files, greps,
# runs the tests with bash, edits, writes, runs the gates and completes:
# item 1 in 9 turns, item 2 in 31 (the long one, 100 KiB read: a 32k window
# compacts it), item 3 in 7.  Each item is reviewed.  Compactions' condense
# calls are answered by the fake (--auto-condense).
# The run limit control.max_tokens counts every input token, cached or
# not: the long item passes its default (400,000) at a 128k window, so the
# bench raises it.
#   bench/bench_tokens.sh BUILD_DIR [WINDOW [MODE]]   (BUILD_DIR with goald, tests/fake_llm,
#   bench/bench_tokens; WINDOW 128000 by default; MODE openai (default) or anthropic)
set -euo pipefail
B=$(cd "$1" && pwd)
WINDOW=${2:-128000}
MODE=${3:-openai}
GOALD_SOURCE_DIR="$(cd "$(dirname "$0")/.." && pwd)"
export GOALD_BIN="$B/goald" GOALD_BUILD_DIR="$B" GOALD_SOURCE_DIR
SRC=$GOALD_SOURCE_DIR
. "$SRC/tests/integration/lib.sh"
R="$T/repo"
make_repo "$R"
mkdir -p "$R/util"
READS="utf8.h utf8.c jsonw.h jsonw.c hash.h hash.c timeutil.h timeutil.c fsutil.h fsutil.c err.h
    err.c log.c url.c retry.c termesc.c budget.c http.c cron.c"
for f in strbuf.c strbuf.h $READS; do
    [ -f "$SRC/util/$f" ] && cp "$SRC/util/$f" "$R/util/$f"
done
cat >"$R/test.sh" <<'EOF'
#!/bin/sh
# the project's tests: each file of util/ compiles on its own
fail=0
for f in util/*.c; do
    if [ -s "$f" ]; then echo "ok - $f"; else echo "not ok - $f is empty"; fail=1; fi
done
grep -q 'strbuf_add_repeat' util/strbuf.h && echo "ok - strbuf_add_repeat declared" || echo "ok # SKIP strbuf_add_repeat"
exit $fail
EOF
printf 'util: strings, UTF-8, hashing and JSON output for a small daemon.\nRun sh test.sh.\n' >"$R/README.md"
git -C "$R" add -A && git -C "$R" commit -q -m "the reference project"

call() { # call NAME ARGS_JSON [TEXT]: one execute turn calling one tool
    jq -cn --arg n "$1" --argjson a "$2" --arg t "${3:-}" \
        '{tool_calls: [{name: $n, arguments: $a}], usage: "auto"} + (if $t == "" then {} else {content: $t} end)'
}
read_() { call read "{\"path\": \"$1\"}" "${2:-}"; }
grep_() { call grep "{\"pattern\": \"$1\"}"; }
bash_() { call bash "$(jq -cn --arg c "$1" '{command: $c}')"; }
edit_() { call edit "$(jq -cn --arg p "$1" --arg o "$2" --arg n "$3" '{path: $p, old_text: $o, new_text: $n}')" "${4:-}"; }
write_() { call write "$(jq -cn --arg p "$1" --arg c "$2" '{path: $p, content: $c}')"; }
review() { echo '{"content": {"verdict": "pass", "findings": [{"aspect": "code_smell", "severity": "info", "note": "fine"}]}, "usage": "auto"}'; }
{
    echo '{"content": {"components": ["util/strbuf", "util/utf8", "util/jsonw"], "implicit_requirements": ["keep every existing function and its contract"], "success_criteria": ["sh test.sh exits 0", "strbuf_add_repeat exists and is documented"], "allowed_actions": ["ls", "read", "grep", "edit", "write", "bash", "run_gates"], "verification": [{"name": "tests", "type": "test", "command": "sh test.sh", "must_pass": true}]}, "usage": "auto"}'
    echo '{"content": {"work_items": [
        {"key": "wi-1", "title": "Add strbuf_add_repeat", "description": "a function that appends a byte n times, declared in strbuf.h", "type": "code", "priority": 80, "effort": "S", "critical": true, "depends_on": []},
        {"key": "wi-2", "title": "Document the UTF-8 and JSON helpers", "description": "read util/ and write docs/util.md describing each helper", "type": "doc", "priority": 60, "effort": "M", "critical": false, "depends_on": ["wi-1"]},
        {"key": "wi-3", "title": "Test strbuf_add_repeat", "description": "a check in test.sh", "type": "test", "priority": 50, "effort": "S", "critical": false, "depends_on": ["wi-1"]}]}, "usage": "auto"}' | jq -c .
    # wi-1: 9 turns
    call ls '{"path": "."}' "Let me look at the project first."
    read_ README.md
    read_ util/strbuf.h "The buffer API is in strbuf.h."
    grep_ strbuf_add
    read_ util/strbuf.c
    edit_ util/strbuf.h '#endif' "$(printf '/* Append byte c n times. */\nint strbuf_add_repeat(strbuf *sb, char c, size_t n);\n\n#endif')" "Declaring the function."
    bash_ "sh test.sh"
    call run_gates '{}'
    call complete '{"summary": "strbuf_add_repeat declared in util/strbuf.h; test.sh passes"}'
    review
    # wi-2: 31 turns
    call ls '{"path": "util"}' "Reading every helper before writing the document."
    for f in $READS; do
        read_ "util/$f"
        case $f in
        utf8.c) grep_ utf8_cut ;;
        jsonw.c) grep_ 'jsonw_' ;;
        timeutil.c) bash_ "wc -l util/*.c util/*.h" ;;
        fsutil.c) grep_ 'int fs_' ;;
        esac
    done
    bash_ "mkdir -p docs && ls docs"
    write_ docs/util.md "$(printf '# util\n\nstrbuf: a capped growing buffer.\nutf8: cutting text on character boundaries.\njsonw: streamed JSON output.\nhash: SHA-256 in hex.\ntimeutil: clocks and durations.\nfsutil: atomic writes and directories.\n'
        for f in $READS; do printf '\n## util/%s\n\n' "$f"; grep -E '^[a-z].*\(' "$R/util/$f" | head -12 | sed 's/^/- `/; s/$/`/'; done)"
    read_ docs/util.md
    edit_ docs/util.md 'hash: SHA-256 in hex.' 'hash: SHA-256 of a buffer or a file, in hex.'
    bash_ "sh test.sh"
    call run_gates '{}'
    call complete '{"summary": "docs/util.md describes each helper of util/"}'
    review
    # wi-3: 7 turns
    read_ test.sh "The test script first."
    grep_ strbuf_add_repeat
    edit_ test.sh 'exit $fail' "$(printf 'grep -q "strbuf_add_repeat(strbuf" util/strbuf.h && echo "ok - signature" || fail=1\nexit $fail')"
    bash_ "sh test.sh"
    read_ util/strbuf.h
    call run_gates '{}'
    call complete '{"summary": "test.sh checks the declaration of strbuf_add_repeat"}'
    review
} >"$T/s.jsonl"
FAKE_LLM_ARGS=--auto-condense FAKE_LLM_CONTEXT_TOKENS=$WINDOW start_fake_llm tokens "$MODE" "$T/s.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=fake-model GOALD_LLM_CONTEXT_WINDOW=$WINDOW
[ "$MODE" = anthropic ] && export GOALD_LLM_PROVIDER=anthropic
export GOALD_CONTROL_MAX_TURNS=100 GOALD_CONTROL_MAX_TOKENS=5000000
jq -n --arg r "$R" '{title: "strbuf_add_repeat, documented and tested", repo: $r, base_branch: "main",
    description: "Add strbuf_add_repeat to util/strbuf, document the util/ helpers in docs/util.md, and test the new function in test.sh.",
    publish: {push: false, pull_request: false}}' >"$T/goal.json"
"$G" submit "$T/goal.json" >/dev/null
for _ in $(seq 1 12); do
    if r=$("$G" claim --lane plan 2>/dev/null) || r=$("$G" claim --lane work 2>/dev/null); then
        "$G" job "$r" >/dev/null 2>>"$T/jobs.err" || true
    else
        break
    fi
done
echo "window: $WINDOW tokens ($MODE); goal: $(sql "SELECT status FROM goals") ($(sql "SELECT group_concat(key || '=' || status, ' ') FROM work_items"));" \
    "compactions: $(sql "SELECT count(*) FROM events WHERE type='context.compacted'")"
"$B/bench/bench_tokens" "$FAKE_LOG"
