#!/usr/bin/env bash
# What elaboration sees of the repository: the file tree with sizes (cut
# per folder, in all and in depth, saying so), the README (its first
# lines), the files the goal names; and its looks: a read and a grep the
# model asks for come back in the next request and its answer after them
# is the one used, each read a tool_call event.  The repository is
# hostile: a link to /etc/passwd (as the README, in the tree, named by the
# goal, asked for by a look) is never followed, an absolute path is refused.
. "$(dirname "$0")/lib.sh"
. "$GOALD_SOURCE_DIR/tests/fixtures/units.sh"

R="$T/repo"
make_repo "$R"
for i in $(seq 1 200); do echo "readme line $i"; done >"$R/README.md"
mkdir -p "$R/src/many" "$R/a/b/c/d/e" "$R/docs"
for i in $(seq 1 60); do echo "x" >"$R/src/many/f$i.txt"; done
echo "deep" >"$R/a/b/c/d/e/deep_file.txt"
printf 'def add(a, b):\n    return a - b  # MARKER_CALC\n' >"$R/src/calc.py"
echo "see MARKER_GREP here" >"$R/docs/notes.txt"
ln -s /etc/passwd "$R/leak"
ln -s /etc "$R/etcdir"
git -C "$R" add -A && git -C "$R" commit -q -m files

LOOK='{"look": [{"tool": "read", "path": "docs/notes.txt"}, {"tool": "grep", "pattern": "MARKER_GREP"}, {"tool": "read", "path": "etcdir/passwd"}, {"tool": "read", "path": "leak"}, {"tool": "read", "path": "/etc/passwd"}], "components": [], "implicit_requirements": [], "success_criteria": [], "allowed_actions": [], "verification": []}'
ANSWER='{"components": ["src/calc.py"], "implicit_requirements": [], "success_criteria": ["add returns the sum, seen after a look"], "allowed_actions": ["read", "edit"], "verification": []}'
{ echo "{\"content\": $LOOK}"; echo "{\"content\": $ANSWER}"; } >"$T/elab.jsonl"
start_fake_llm elab openai "$T/elab.jsonl"
export GOALD_LLM_PROVIDER=openai GOALD_LLM_BASE_URL="$FAKE_URL" GOALD_LLM_MODEL=m1
submit_fresh view "$R" ', "description": "Fix add in src/calc.py (it subtracts); see also leak and etcdir/passwd."'
step plan
expect_eq "$(jqo .status)" success "elaboration"

reqs=$(jq -c 'select(.headers["x-goald-stage"] == "elaborate") | .body.messages[1].content' "$FAKE_LOG")
expect_eq "$(printf '%s\n' "$reqs" | wc -l)" 2 "one look, then the answer"
first=$(printf '%s\n' "$reqs" | sed -n 1p | jq -r .)
second=$(printf '%s\n' "$reqs" | sed -n 2p | jq -r .)

# the tree: folders with their entries and sizes, the caps said
case "$first" in *"src/: calc.py 47B, many/"*) ok ;; *) fail "no tree with sizes: $first" ;; esac
case "$first" in *"src/many/: f1.txt 2B"*"+20 more"*) ok ;; *) fail "a big folder is not cut with a count: $first" ;; esac
case "$first" in *"a/b/c/d/: e/"*) ok ;; *) fail "the tree does not reach 4 levels: $first" ;; esac
case "$first" in *deep_file.txt*) fail "the tree goes deeper than its cap: $first" ;; *) ok ;; esac
case "$first" in *"[tree cut: 20 entries not shown"*"1 folders not listed"*) ok ;; *) fail "the tree's cut is not said: $first" ;; esac
case "$first" in *"leak@"*"etcdir@"* | *"etcdir@"*"leak@"*) ok ;; *) fail "links are not marked: $first" ;; esac
case "$first" in *": .git"* | *", .git"* | *".git/:"*) fail "git metadata in the tree: $first" ;; *) ok ;; esac
# the README: its first lines, the cut said
case "$first" in *"README.md (first 80 lines"*"readme line 1"*"readme line 80"*"[120 more lines in file. Use offset=81"*) ok ;;
    *) fail "no README head: $first" ;; esac
case "$first" in *"readme line 81"*) fail "the README is not capped: $first" ;; *) ok ;; esac
# the file the goal names; the link it names is not followed
case "$first" in *"File the goal names: src/calc.py"*MARKER_CALC*) ok ;; *) fail "the named file is not shown: $first" ;; esac
# the looks' results come back
case "$second" in *"Look 1 of 4"*'### read {"path":"docs/notes.txt"'*"see MARKER_GREP here"*) ok ;;
    *) fail "the read look is not answered: $second" ;; esac
case "$second" in *'### grep {"pattern":"MARKER_GREP"'*"docs/notes.txt"*) ok ;; *) fail "the grep look is not answered: $second" ;; esac
case "$second" in *'### read: paths are relative'*) ok ;; *) fail "an absolute path is not refused: $second" ;; esac
# never the host's files, whichever way
if grep -q 'root:x:0' "$FAKE_LOG"; then fail "/etc/passwd reached the model"; fi
ok
# the answer after the look is the one used; the reads are events
expect_eq "$(sql "SELECT success_criteria LIKE '%seen after a look%' FROM goals WHERE id='$GID'")" 1 "the answer after the look"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id='$GID' AND type='tool_call.completed' AND json_extract(payload,'$.tool')='grep'")" 1 "the grep is an event"
expect_eq "$(sql "SELECT count(*) FROM events WHERE goal_id='$GID' AND type='tool_call.failed' AND json_extract(payload,'$.tool')='read' AND json_extract(payload,'$.error_class')='policy'")" 2 "the links' reads are refused as policy"

# a README that is a link out of the repository is not followed
R2="$T/repo2"
make_repo "$R2"
git -C "$R2" rm -q README
ln -s /etc/passwd "$R2/README.md"
git -C "$R2" add -A && git -C "$R2" commit -q -m link
echo "{\"content\": $ANSWER}" >"$T/elab2.jsonl"
start_fake_llm elab2 openai "$T/elab2.jsonl"
export GOALD_LLM_BASE_URL="$FAKE_URL"
submit_fresh view2 "$R2" ', "description": "Read README.md and /etc/passwd."'
step plan
expect_eq "$(jqo .status)" success "elaboration with a linked README"
req=$(jq -r 'select(.headers["x-goald-stage"] == "elaborate") | .body.messages[1].content' "$FAKE_LOG")
case "$req" in *"README.md (first 80 lines"*"outside"*|*"README.md (first 80 lines"*"policy"*|*"README.md (first 80 lines"*"leads out"*) ok ;;
    *) fail "the linked README's refusal is not shown: $req" ;; esac
if grep -q 'root:x:0' "$FAKE_LOG"; then fail "/etc/passwd reached the model through the README"; fi
ok
done_tests
