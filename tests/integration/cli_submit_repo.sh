#!/usr/bin/env bash
# submit refuses a repository goald cannot work on: one with no commits,
# or without the goal's base branch (the message names the branches it has).
. "$(dirname "$0")/lib.sh"

goal() { printf '{"title": "t", "repo": "%s"%s}\n' "$1" "${2:+, \"base_branch\": \"$2\"}" >"$T/goal.json"; }
goals() { sql "SELECT count(*) FROM goals" 2>/dev/null || echo 0; }

# --- submit: a repository with no commits is refused, nothing stored
mkdir -p "$T/empty" && git -C "$T/empty" init -q -b main
goal "$T/empty"
run "$G" submit "$T/goal.json"
expect_rc 2 "submit: repo with no commits"
expect_err "has no commits"
goal "$T/empty" main
run "$G" submit "$T/goal.json"
expect_rc 2 "submit: repo with no commits, base_branch given"
expect_err "has no commits"
expect_eq "$(goals)" 0 "goals stored"

# --- submit: a base branch the repository lacks names the branches it has
make_repo "$T/repo"
git -C "$T/repo" branch dev
goal "$T/repo" release
run "$G" submit "$T/goal.json"
expect_rc 2 "submit: no such base branch"
expect_err "base_branch"
expect_err "no branch \"release\""
expect_err "its branches: dev, main"
expect_eq "$(goals)" 0 "goals stored"

