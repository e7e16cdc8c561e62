#!/usr/bin/env bash
# doctor shows the identity goald commits as (vcs.author_name,
# vcs.author_email), not the user's own git identity.
. "$(dirname "$0")/lib.sh"

git config --global user.name "Human User"
git config --global user.email human@example.com

run "$G" doctor
expect_out "commits as goald <goald@localhost> (vcs.author_*, the default)" "doctor: the default identity"
case "$OUT" in *"Human User"*|*human@example.com*) fail "doctor shows the user's git identity: $OUT" ;; esac
ok

run env GOALD_VCS_AUTHOR_NAME="Build Bot" GOALD_VCS_AUTHOR_EMAIL=bot@example.org "$G" doctor
expect_out "commits as Build Bot <bot@example.org> (vcs.author_*)" "doctor: the configured identity"
case "$OUT" in *"Human User"*) fail "doctor shows the user's git identity: $OUT" ;; esac
ok
run env GOALD_VCS_AUTHOR_NAME="Build Bot" GOALD_VCS_AUTHOR_EMAIL=bot@example.org "$G" doctor --json
expect_eq "$(jqo '[.checks[] | select(.name=="git")][0].user_name')" "Build Bot" "doctor --json: user_name"
expect_eq "$(jqo '[.checks[] | select(.name=="git")][0].default')" false "doctor --json: default"
done_tests
