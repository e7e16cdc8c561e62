#!/usr/bin/env bash
# The chaos harness (chaos.sh) on goals of three independent items, which
# run side by side in worktrees of their own and land one after another
# (docs/lifecycle.md, "Items side by side"), while the daemon and random
# jobs are killed: every goal completes or waits for a human, no item has
# two commits, nothing is left running.
export CHAOS_ITEMS=${CHAOS_ITEMS:-3} CHAOS_GOALS=${CHAOS_ITEMS_GOALS:-6}
exec bash "$(dirname "$0")/chaos.sh"
