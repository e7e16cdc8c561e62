#!/usr/bin/env bash
# The web dashboard in Debian's chromium, headless, driven by
# puppeteer-core (tests/browser/dashboard.js): the real `goald daemon`
# works scripted goals (the script provider) while the real `goald serve`
# answers the page.  The first goal, submitted with the CLI, escalates with
# a question holding <script>; the second is submitted through the page's
# form with a hostile title: its first item runs two turns (the page shows
# the turn and the last tool call while it runs) and fails a test gate
# once before it passes; its second item reads a path shaped like a
# GitHub token (the page shows that event redacted).  The third goal,
# submitted by the page's script after the first completed, asks in its
# second, critical item (the goal is blocked); the page resolves that as
# complete_partial, and the goal shows partial.  A read token sees the
# escalation but no resolve form.  Screenshots go to
# $GOALD_BUILD_DIR/artifacts/browser
# (dashboard-*.png there: the first screen of some pages, 1024 px wide,
# which docs/img holds for docs/http.md).
# chromium, node and npm are required (scripts/install-deps): missing, the
# test fails.
. "$GOALD_SOURCE_DIR/tests/integration/lib.sh"
set -e

CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || fail "$CHROMIUM is missing: apt-get install chromium (scripts/install-deps)"
command -v node >/dev/null && command -v npm >/dev/null || fail "node and npm are needed (scripts/install-deps)"

# puppeteer-core, at the locked version, in the build folder (never in the
# sources; it downloads no browser)
DEPS="$GOALD_BUILD_DIR/browser-deps"
HERE="$GOALD_SOURCE_DIR/tests/browser"
if ! cmp -s "$HERE/package-lock.json" "$DEPS/package-lock.json" || [ ! -d "$DEPS/node_modules/puppeteer-core" ]; then
    rm -rf "$DEPS"
    mkdir -p "$DEPS"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$DEPS/"
    (cd "$DEPS" && PUPPETEER_SKIP_DOWNLOAD=1 NPM_CONFIG_UPDATE_NOTIFIER=false npm ci --no-audit --no-fund --loglevel=error >/dev/null) ||
        fail "npm ci of tests/browser failed"
fi

export GOALD_CONTROL_BACKOFF_BASE_MS=1 GOALD_DAEMON_TICK_MS=100

# the project: tests/*.sh run by test.sh (TAP, numbered: the failing case
# has a name)
R="$T/repo"
make_repo "$R"
mkdir -p "$R/tests"
printf '#!/bin/sh\nfail=0\nfor t in tests/*.sh; do sh "$t" || fail=1; done\nexit $fail\n' >"$R/test.sh"
printf 'echo "ok 1 - readme exists"\n' >"$R/tests/readme_test.sh"
git -C "$R" add -A
git -C "$R" commit -q -m "tests"

HOSTILE_Q='Which sign? <script>window.__pwned=3</script><img src=x onerror="window.__pwned=4">'
HOSTILE_ITEM='<script>window.__pwned=5</script>document mul'
mul() { # the model's mul.sh computing with OP, and its test
    jq -nc --arg op "$1" '[{name: "write", arguments: {path: "mul.sh", content: ("#!/bin/sh\necho $(($1 " + $op + " $2))\n")}},
        {name: "write", arguments: {path: "tests/mul_test.sh",
         content: "got=$(sh mul.sh 2 3)\nif [ \"$got\" = 6 ]; then echo \"ok 1 - mul 2 3\"; else echo \"not ok 1 - mul 2 3: expected 6, got $got\"; exit 1; fi\n"}},
        {name: "complete", arguments: {summary: "mul.sh written"}}]'
}
SECRET=ghp_$(printf 'Zq8vT3kLw9xNc2RbY7pMf4HsJd6Ga1EuK0oV' | head -c 36)
jq -nc --arg q "$HOSTILE_Q" --arg t2 "$HOSTILE_ITEM" --arg secret "$SECRET" --argjson m1 "$(mul +)" --argjson m2 "$(mul '*')" '
  # goal 1 (the CLI): its agent asks a question
  {stage: "elaborate", content: {components: ["README"], implicit_requirements: [], success_criteria: ["decided"],
   allowed_actions: ["read", "write", "ask_human"], verification: []}},
  {stage: "plan", content: {work_items: [{key: "wi-1", title: "decide the sign", description: "ask",
   type: "code", effort: "S", critical: false, depends_on: []}]}},
  {stage: "execute", tool_calls: [{name: "ask_human", arguments: {question: $q}}]},
  # goal 2 (the page): two items, the second after the first
  {stage: "elaborate", content: {components: ["mul.sh"], implicit_requirements: [], success_criteria: ["sh test.sh exits 0"],
   allowed_actions: ["read", "write", "edit", "bash", "run_gates"],
   verification: [{name: "tests", type: "test", command: "sh test.sh", must_pass: true}]}},
  {stage: "plan", content: {work_items: [
    {key: "wi-1", title: "add mul.sh", description: "multiply", type: "code", effort: "S", critical: true, depends_on: []},
    {key: "wi-2", title: $t2, description: "notes", type: "code", effort: "S", critical: false, depends_on: ["wi-1"]}]}},
  # wi-1, attempt 1: two turns, the second slow (the page watches it run)
  {stage: "execute", sleep_ms: 300, tool_calls: [$m1[0]]},
  {stage: "execute", sleep_ms: 6000, tool_calls: $m1[1:]},
  {stage: "execute", sleep_ms: 300, tool_calls: $m2},
  {stage: "review", content: {verdict: "pass", findings: []}},
  {stage: "execute", sleep_ms: 300, tool_calls: [{name: "read", arguments: {path: $secret}},
                                                 {name: "write", arguments: {path: "NOTES.md", content: "mul.sh multiplies\n"}},
                                                 {name: "complete", arguments: {summary: "notes"}}]},
  {stage: "review", content: {verdict: "pass", findings: []}},
  # goal 1 again, after the answer given through the page
  {stage: "execute", tool_calls: [{name: "write", arguments: {path: "SIGN.md", content: "the sign rules stay\n"}},
                                  {name: "complete", arguments: {summary: "the sign rules stay"}}]},
  {stage: "review", content: {verdict: "pass", findings: []}},
  # goal 3 (the page'"'"'s script, after goal 1): its second item asks; the page
  # answers complete_partial
  {stage: "elaborate", content: {components: ["README"], implicit_requirements: [], success_criteria: ["documented"],
   allowed_actions: ["read", "write", "ask_human"], verification: []}},
  {stage: "plan", content: {work_items: [
    {key: "wi-1", title: "write the usage", description: "usage", type: "code", effort: "S", critical: true, depends_on: []},
    {key: "wi-2", title: "pick a licence", description: "ask", type: "code", effort: "S", critical: true, depends_on: ["wi-1"]}]}},
  {stage: "execute", tool_calls: [{name: "write", arguments: {path: "USAGE.md", content: "sh mul.sh A B\n"}},
                                  {name: "complete", arguments: {summary: "usage written"}}]},
  {stage: "review", content: {verdict: "pass", findings: []}},
  {stage: "execute", tool_calls: [{name: "ask_human", arguments: {question: "Which licence: MIT or GPL?"}}]}' >"$T/script.jsonl"
export GOALD_LLM_SCRIPT="$T/script.jsonl"

run "$G" migrate; expect_rc 0 "migrate"
jq -n --arg repo "$R" '{title: "a goal whose agent asks", repo: $repo, base_branch: "main",
    publish: {push: false, pull_request: false}}' >"$T/g1.json"
run "$G" submit "$T/g1.json"; expect_rc 0 "submit goal 1"

"$G" daemon >"$T/daemon.out" 2>"$T/daemon.err" &
DAEMON=$!
# the page's goal names $R: the one repository API goals may name here
GOALD_HTTP_REPOS=$(jq -nc --arg r "$R" '[$r]') "$G" serve --listen 127.0.0.1:0 >"$T/serve.out" 2>"$T/serve.err" &
SERVE=$!
FAKE_PIDS="$DAEMON $SERVE"
wait_diag() { tail -5 "$T/daemon.err" "$T/serve.err"; }
wait_until 30 grep -q "serving" "$T/serve.out"
URL=$(head -1 "$T/serve.out" | sed 's/.*serving //')
esc_open() { [ "$(sql "SELECT count(*) FROM escalations WHERE status = 'open' AND type = 'ask_human'")" = 1 ]; }
wait_until 60 esc_open; ok
TOKEN=$("$G" token create --scope admin --name browser | tail -n1)
READ_TOKEN=$("$G" token create --scope read --name browser-read | tail -n1)

mkdir -p "$GOALD_BUILD_DIR/artifacts/browser"
start=$(date +%s)
NODE_PATH="$DEPS/node_modules" GOALD_URL="$URL" GOALD_TOKEN="$TOKEN" GOALD_READ_TOKEN="$READ_TOKEN" GOALD_REPO="$R" CHROMIUM="$CHROMIUM" \
    SHOTS="$GOALD_BUILD_DIR/artifacts/browser" HOSTILE_Q="$HOSTILE_Q" SECRET="$SECRET" \
    node "$HERE/dashboard.js" || fail "the browser test failed (daemon: $(tail -3 "$T/daemon.err"))"
echo "browser part: $(($(date +%s) - start)) s"
# the daemon stops here: what follows checks what the page did
kill -TERM "$DAEMON"; wait "$DAEMON" || true

# the API agrees with what the page showed
expect_eq "$(sql "SELECT count(*) FROM escalations WHERE status = 'open'")" 0 "no open escalation left"
expect_eq "$(sql "SELECT count(*) FROM events WHERE type = 'http.write' AND json_extract(payload, '\$.action') = 'resolve'")" 2 \
    "both resolves came through the API"
expect_eq "$(sql "SELECT status || ' ' || partial FROM goals WHERE title = 'a goal left partial'")" "completed 1" \
    "the third goal completed partial"
expect_eq "$(sql "SELECT group_concat(status, ' ') FROM (SELECT w.status FROM work_items w JOIN goals g ON g.id = w.goal_id
              WHERE g.title LIKE '<script>%' ORDER BY w.key)")" "done done" "the page's goal: items done"
echo "PASS ($TESTS_RUN checks)"
