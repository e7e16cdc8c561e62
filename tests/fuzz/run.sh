#!/usr/bin/env bash
# Run one libFuzzer target on a copy of its seed corpus (ctest -L fuzz).
#
#   run.sh [--expect-finding] BINARY SEED_DIR WORK_DIR SECONDS [DICT]
#
# The fuzzer runs in WORK_DIR (made afresh) for SECONDS seconds on
# WORK_DIR/corpus, a copy of SEED_DIR (new inputs it finds stay there, the
# sources are not touched), with a 10 s timeout per input and a 2 GB memory
# cap.  Whatever it finds (crash, leak, timeout, sanitizer report, broken
# invariant) lands in WORK_DIR/artifacts/ and fails the test.
# --expect-finding inverts that: the run must fail with an artifact (the
# canary check, docs/fuzzing.md).
set -uo pipefail
expect=0
if [ "${1:-}" = --expect-finding ]; then
    expect=1
    shift
fi
bin=$1 seeds=$2 work=$3 seconds=$4 dict=${5:-}
name=$(basename "$bin")

rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp -R "$seeds/." "$work/corpus/"
args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
      -artifact_prefix="$work/artifacts/")
[ -n "$dict" ] && [ -f "$dict" ] && args+=(-dict="$dict")
echo "$name: $seconds s on $(ls "$seeds" | wc -l) seeds in $work"
cd "$work" || exit 1
"$bin" "${args[@]}" "$work/corpus" >"$work/log" 2>&1
rc=$?
found=$(ls "$work/artifacts")
if [ $rc -ne 0 ] || [ -n "$found" ]; then
    grep -v '^#[0-9]' "$work/log" | tail -n 60
    echo "$name: exit $rc, findings in $work/artifacts: ${found:-none}"
    if [ $expect = 1 ] && [ -n "$found" ] && [ $rc -ne 0 ]; then
        echo "$name: failed as expected"
        exit 0
    fi
    exit 1
fi
grep -E '^(Done|stat::)' "$work/log"
if [ $expect = 1 ]; then
    echo "$name: expected a finding, got none"
    exit 1
fi
echo "$name: no findings, corpus now $(ls "$work/corpus" | wc -l) inputs"
