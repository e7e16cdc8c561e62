#!/usr/bin/env bash
# `goald watch` under a real pseudo-terminal (tmux, 80
# columns): the view is redrawn in place while a daemon works through a
# three-item goal (each execute turn sleeps), the bar advances, the item
# running now and its tool call are shown, the last line names the
# finished goal, and watch exits 0.  Without a terminal it prints one line
# per change; a goal waiting on a human makes it exit 3; every line fits.
. "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || fail "tmux is needed (scripts/install-deps)"

S="$T/s.jsonl"
{
    echo '{"stage": "elaborate", "content": {"components": ["notes"], "implicit_requirements": [], "success_criteria": ["notes exist"], "allowed_actions": ["write", "complete", "ask_human"], "verification": []}}'
    echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Write note one", "description": "", "type": "doc", "priority": 90, "effort": "S", "critical": true, "depends_on": []}, {"key": "wi-2", "title": "Write note two", "description": "", "type": "doc", "priority": 80, "effort": "S", "critical": true, "depends_on": ["wi-1"]}, {"key": "wi-3", "title": "Write note three", "description": "", "type": "doc", "priority": 70, "effort": "S", "critical": true, "depends_on": ["wi-2"]}]}}'
    for i in 1 2 3; do
        echo "{\"stage\": \"execute\", \"sleep_ms\": 700, \"tool_calls\": [{\"name\": \"write\", \"arguments\": {\"path\": \"note$i.txt\", \"content\": \"$i\"}}]}"
        echo "{\"stage\": \"execute\", \"sleep_ms\": 700, \"tool_calls\": [{\"name\": \"complete\", \"arguments\": {\"summary\": \"note $i\"}}]}"
        echo '{"stage": "review", "content": {"verdict": "pass", "findings": []}}'
    done
    echo '{"stage": "evaluate", "content": {"criteria": [{"index": 0, "verdict": "met", "quote": "note1.txt holds 1"}]}}'
} >"$S"
export GOALD_LLM_MODELS="[{\"provider\":\"script\",\"model\":\"m1\",\"script\":\"$S\"}]"
echo '{"title": "three notes, one after the other"}' >"$T/goal.json"
run "$G" submit "$T/goal.json"; expect_rc 0 submit
GID=$OUT

# --- under a pseudo-terminal: tmux, 80x30 -----------------------------------
SOCK="$T/tmux.sock"
tmx() { tmux -S "$SOCK" "$@"; }
cleanup_tmux() { tmx kill-server 2>/dev/null || true; cleanup; }
trap cleanup_tmux EXIT
tmx -f /dev/null new-session -d -x 80 -y 30 -s w \
    "env GOALD_DB='$GOALD_DB' '$G' watch; echo EXIT=\$?; sleep 60"
"$G" daemon --once >"$T/daemon.out" 2>&1 &
DPID=$!
: >"$T/frames"
for _ in $(seq 1 400); do
    tmx capture-pane -p -t w >"$T/frame" 2>/dev/null || true
    cat "$T/frame" >>"$T/frames"
    echo "=====" >>"$T/frames"
    grep -q '^EXIT=' "$T/frame" && break
    sleep 0.05
done
wait $DPID || fail "daemon --once: $(cat "$T/daemon.out")"
grep -q '^EXIT=' "$T/frame" || fail "watch did not exit: $(cat "$T/frame")"
expect_eq "$(grep '^EXIT=' "$T/frame")" "EXIT=0" "watch's exit code"
# the bar advanced: several distinct percentages were on screen, rising
pcts=$(grep -o '\] *[0-9.]*%' "$T/frames" | tr -d '] %' | awk '!seen[$0]++' | tr '\n' ' ')
for p in 0.0 33.3 66.7 100.0; do
    case " $pcts" in *" $p "*) ok ;; *) fail "percentage $p never shown (saw: $pcts)" ;; esac
done
sorted=$(printf '%s\n' $pcts | sort -n | tr '\n' ' ')
expect_eq "$pcts" "$sorted" "percentages only rise"
# the item running now, its turn and its last tool call
grep -q 'now: execute wi-[123] Write note' "$T/frames" || fail "no running item shown: $(head -40 "$T/frames")"
ok
grep -q 'turn [12], write: note[123].txt' "$T/frames" || fail "no tool call shown"
ok
# redrawn in place: the final screen holds the goal once
expect_eq "$(grep -c "^${GID:0:8}  " "$T/frame")" 1 "one block for the goal on screen"
# the last line before the exit code shows the finished goal
last=$(grep -v '^$' "$T/frame" | grep -B1 '^EXIT=' | head -n1)
expect_eq "$last" "goal ${GID:0:8} completed: three notes, one after the other" "last line"
# nothing wider than 80 columns was drawn (tmux would have wrapped it)
[ "$(max_cols <"$T/frames")" -le 80 ] || fail "lines over 80 columns"; ok
tmx kill-server

# --- without a terminal: one line per change; a finished goal exits 0 --------
run "$G" watch --plain "$GID"; expect_rc 0 "watch of a finished goal"
expect_eq "$(printf '%s\n' "$OUT" | tail -n1)" "goal ${GID:0:8} completed: three notes, one after the other"
run "$G" watch; expect_rc 0 "nothing open"
expect_out "no open goals to watch"

# --- a goal that waits on a human: exit 3 with what it waits for -------------
{
    echo '{"stage": "elaborate", "content": {"components": ["x"], "implicit_requirements": [], "success_criteria": ["x"], "allowed_actions": ["ask_human"], "verification": []}}'
    echo '{"stage": "plan", "content": {"work_items": [{"key": "wi-1", "title": "Ask", "description": "", "type": "doc", "priority": 90, "effort": "S", "critical": true, "depends_on": []}]}}'
    echo '{"stage": "execute", "tool_calls": [{"name": "ask_human", "arguments": {"question": "which colour should the notes be, and which font size for the headings?"}}]}'
} >"$S"
echo '{"title": "a question"}' >"$T/g2.json"
run "$G" submit "$T/g2.json"; expect_rc 0
G2=$OUT
run "$G" daemon --once
run env COLUMNS=60 "$G" watch "$G2"
expect_rc 3 "watch of a goal waiting on a human"
expect_out "escalation ask_human wi-1: which colour"
expect_eq "$(printf '%s\n' "$OUT" | tail -n1)" "goal ${G2:0:8} waits on a human: a question"
[ "$(printf '%s\n' "$OUT" | max_cols)" -le 60 ] || fail "lines over 60 columns: $OUT"; ok
run "$G" watch nosuchgoal1; expect_rc 2 "unknown goal"
done_tests
