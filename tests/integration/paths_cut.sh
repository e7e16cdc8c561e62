#!/usr/bin/env bash
# A name too long for its buffer is refused, never cut: cut, a path or a
# ref names another file or branch (util/path.h, scripts/edges).
. "$(dirname "$0")/lib.sh"

goals() { sql "SELECT count(*) FROM goals" 2>/dev/null || echo 0; }

# --- submit: the repository's HEAD is on a branch whose name (309 bytes)
# is longer than the 255 bytes a branch name is read into; the branch its
# first 255 bytes name exists too, on another commit.  The goal is
# refused with the reason, not given that other branch as its base.
make_repo "$T/repo"
a=$(printf 'a%.0s' $(seq 200)); b=$(printf 'b%.0s' $(seq 100))
long="feature/$a/$b"
cut=${long:0:255}
git -C "$T/repo" branch "$cut"
git -C "$T/repo" checkout -q -b "$long"
echo "more" >>"$T/repo/README"
git -C "$T/repo" commit -q -am more
printf '{"title": "t", "repo": "%s"}\n' "$T/repo" >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 2 "submit: HEAD on a branch name too long to hold"
expect_err "the repository's branch: path too long: feature/aaaa"
expect_err "(309 bytes, at most 255)"
expect_eq "$(goals)" 0 "goals stored"
expect_eq "$(sql "SELECT count(*) FROM goals WHERE base_branch = '$cut'" 2>/dev/null || echo 0)" 0 \
    "goals on the cut branch"

# the same repository with the base branch named is taken as it was
printf '{"title": "t", "repo": "%s", "base_branch": "main"}\n' "$T/repo" >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 0 "submit: the base branch named"
expect_eq "$(sql "SELECT base_branch FROM goals")" main "the goal's base branch"
done_tests
