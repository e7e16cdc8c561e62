#!/usr/bin/env bash
# libcurl, libgit2 and libcrypto are loaded on first use only (cmake/lazy_libs.cmake).
. "$(dirname "$0")/lib.sh"

if ! nm "$G" 2>/dev/null | grep -q 'goald_lazy_.*_resolve'; then
    echo "skip: built without GOALD_LAZY_LIBS"
    exit 0
fi
loaded() { LD_DEBUG=files "$@" 2>&1 >/dev/null | grep -o 'file=lib[a-z0-9]*\.so[.0-9]*' | sort -u | tr '\n' ' '; }

libs=$(loaded "$G" --help)
case "$libs" in *libgit2*|*libcurl*|*libcrypto*) fail "goald --help loaded: $libs" ;; esac
ok
libs=$(loaded "$G" goals)
case "$libs" in *libgit2*|*libcurl*) fail "goald goals loaded: $libs" ;; esac
ok
# a goal with a plain repository is checked without libgit2 (vcs/probe.c:
# submit's latency, issue 7); the base branch is still read
make_repo "$T/repo"
echo "{\"title\": \"x\", \"repo\": \"$T/repo\"}" >"$T/g.json"
libs=$(loaded "$G" submit "$T/g.json")
case "$libs" in *libsqlite3*) ;; *) fail "LD_DEBUG showed no libraries: $libs" ;; esac
case "$libs" in *libgit2*) fail "submit with a plain repo loaded libgit2: $libs" ;; *) ok ;; esac
expect_eq "$(sql "SELECT base_branch FROM goals")" main "base branch read without libgit2"
# a linked worktree (.git is a file) goes to libgit2: loaded at the first call, and it works
git -C "$T/repo" worktree add -q -b side "$T/linked" main
echo "{\"title\": \"y\", \"repo\": \"$T/linked\"}" >"$T/g2.json"
libs=$(loaded "$G" submit "$T/g2.json")
case "$libs" in *libgit2*) ok ;; *) fail "submit with a linked worktree did not load libgit2: $libs" ;; esac
expect_eq "$(sql "SELECT base_branch FROM goals WHERE title = 'y'")" side "base branch read through libgit2"
done_tests
