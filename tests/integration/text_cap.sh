#!/usr/bin/env bash
# One model text is capped where goald keeps it: a scripted model completes
# an item with a 20 MiB summary (and answers the review with a 1 MiB
# finding); the events and columns hold at most 16 KiB of each
# (UTF8_TEXT_MAX) followed by "… [cut by goald: N bytes, kept K]", cut on
# a character boundary, and the goal goes on to completion.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/daemon.sh"

make_project "$T/repo"
/usr/bin/python3 - "$T/s.jsonl" <<'PY'
import json, sys
# 20 MiB of two-byte characters: a cut at 16384 bytes falls on a boundary
# only by looking for it
summary = "é" * (10 * 1024 * 1024)
note = "ü" * (512 * 1024)
lines = [
    {"stage": "elaborate", "content": {"components": ["work.log"], "implicit_requirements": [],
     "success_criteria": ["the gate passes"], "allowed_actions": ["ls", "read", "edit", "bash", "run_gates"],
     "verification": []}},
    {"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "log a line",
     "description": "append a line", "type": "code", "effort": "S", "critical": True, "depends_on": []}]}},
    {"stage": "execute", "tool_calls": [{"name": "bash", "arguments": {"command": "echo line >> work.log"}},
                                        {"name": "complete", "arguments": {"summary": summary}}]},
    {"stage": "review", "content": {"verdict": "concerns", "findings": [
        {"aspect": "code_smell", "severity": "info", "note": note}]}},
]
with open(sys.argv[1], "w") as f:
    for l in lines:
        f.write(json.dumps(l, ensure_ascii=False) + "\n")
PY
export GOALD_LLM_SCRIPT="$T/s.jsonl" GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_CONTROL_BACKOFF_MAX_MS=1
goal_json "$T/repo" "a model that writes a 20 MiB summary" >"$T/g.json"
submit_goal "$T/g.json"
run timeout 300 "$G" daemon --once
expect_rc 0 "daemon --once: the goal finished"
expect_eq "$(sql "SELECT status FROM goals")" completed "goal"
expect_eq "$(sql "SELECT status FROM work_items")" done "item"

# no event and no column holds more than the cap and its note
big=$(sql "SELECT max(length(CAST(payload AS BLOB))) FROM events")
[ "$big" -lt 40000 ] || fail "an event of $big bytes is stored"
ok
# the summary, as the events carry it: at most 16384 bytes, the note
# included; what is kept is whole characters (cut on a boundary), as many
# bytes as the note says
note_of() { /usr/bin/python3 -c 'import re, sys
t = sys.stdin.read().rstrip("\n")
m = re.fullmatch(r"(.*) … \[cut by goald: (\d+) bytes, kept (\d+)\]", t, re.S)
assert m, t[-200:]
head = m.group(1)
assert set(head) == {sys.argv[1]}, "cut inside a character or foreign text"
assert len(head.encode()) == int(m.group(3)) and len(t.encode()) <= 16384, (len(head.encode()), m.group(3), len(t.encode()))
print(m.group(2), "kept", "most" if len(t.encode()) > 16300 else "little")' "$1"; }
s=$(sql "SELECT json_extract(payload, '\$.summary') FROM events WHERE type = 'work_item.verify'" | note_of é)
expect_eq "$s" "20971520 kept most" "work_item.verify summary"
# the commit message holds the capped summary (its body wrapped at 72
# characters: read with the line breaks as spaces)
msg=$(git -C "$T/repo" log -1 --format=%B "$(sql "SELECT commit_sha FROM work_items")" | tr '\n' ' ')
case "$msg" in *"[cut by goald: 20971520 bytes, kept 163"*) ok ;; *) fail "commit message: ${msg:0:200}" ;; esac
# the review's finding, as its decision keeps it
f=$(sql "SELECT note FROM decisions WHERE kind = 'review_finding'" | note_of ü)
expect_eq "$f" "1048576 kept most" "review finding"
done_tests
