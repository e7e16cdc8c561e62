# bench/lib.sh - sourced by the bench scripts.
# bench_make_goal DIR I: repository DIR/repoI (add.sh subtracts) and its
# goal file DIR/goalI.json (the gate `true`, no publishing).
bench_make_goal() {
    local r="$1/repo$2"
    mkdir -p "$r"
    git -C "$r" init -q -b main
    printf '#!/bin/sh\necho $(($1 - $2))\n' >"$r/add.sh"
    git -C "$r" add add.sh
    git -C "$r" -c user.email=b@example.com -c user.name=b commit -q -m init
    jq -n --arg repo "$r" --arg t "bench goal $2" '{title: $t, repo: $repo, base_branch: "main",
        success_criteria: ["the gate passes"],
        verification: [{name: "true", type: "test", command: "true", must_pass: true}],
        publish: {push: false, pull_request: false}}' >"$1/goal$2.json"
}

# bench_start_daemon GOALD: `GOALD daemon` in the background (stderr to
# $W/daemon.err), its pid in DPID, once its status says running.
bench_start_daemon() {
    "$1" daemon 2>"$W/daemon.err" &
    DPID=$!
    for _ in $(seq 1 200); do
        [ "$("$1" status --json 2>/dev/null | jq -r .daemon.state)" = running ] && break
        sleep 0.05
    done
}
