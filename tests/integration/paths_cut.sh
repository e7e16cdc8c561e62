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

# --- keys are held whole too: a trigger's label (200 bytes, held in 128)
# would match issues of another label once cut; the configuration is
# refused, naming the field
label=$(printf 'l%.0s' $(seq 200))
GOALD_FORGE_TRIGGERS="[{\"repo\": \"acme/widgets\", \"local_repo\": \"/x\", \"label\": \"$label\"}]" \
    run "$G" status
expect_rc 2 "a trigger label too long to hold"
expect_err "forge.triggers[0].label: at most 127 bytes"

# and a gate's name (a gate result holds 127 bytes): cut, two gates that
# differ past it would be one
gate=$(printf 'g%.0s' $(seq 127))
printf '{"title": "t", "repo": "%s", "base_branch": "main", "verification": [{"name": "%s1", "command": "true"}, {"name": "%s2", "command": "false"}]}\n' \
    "$T/repo" "$gate" "$gate" >"$T/goal.json"
run "$G" submit "$T/goal.json"
expect_rc 2 "submit: a gate name too long to hold"
expect_err "verification[0].name: at most 127 bytes"
expect_eq "$(goals)" 1 "goals stored"
done_tests
