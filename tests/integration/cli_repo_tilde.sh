#!/usr/bin/env bash
# submit: "~" in a repo path is the user's home, as a shell reads it;
# "~name" is refused, naming it.
. "$(dirname "$0")/lib.sh"

goal() { printf '{"title": "t", "repo": "%s"}\n' "$1" >"$T/goal.json"; }

# --- repo: "~/..." is the user's home, as a shell reads it
make_repo "$HOME/src/tool"
goal "~/src/tool"
run "$G" submit "$T/goal.json"
expect_rc 0 "submit: repo under ~/"
expect_eq "$(sql "SELECT repo FROM goals")" "$HOME/src/tool" "stored repo"
goal "~nobody/src/tool"
run "$G" submit "$T/goal.json"
expect_rc 2 "submit: repo under ~name"
expect_err "\"~name\" is not expanded"
