#!/usr/bin/env bash
# User-space instructions per GET of two bakeoff builds, interleaved A B A B
# on one redis-server (see bench/instructions-lib.sh for how they are
# counted), at pipeline 1 and 16.
#
#   bench/ab-get-instructions.sh OLD_BINARY NEW_BINARY [ROUNDS]
#
# e.g. build the last landed commit in a git worktree, copy its
# target/release/bakeoff aside, and compare it with this checkout's.
# bench/instructions.sh holds a build to the counts kept in the repository.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: $0 OLD_BINARY NEW_BINARY [ROUNDS]" >&2; exit 2; }
old=$1 new=$2 rounds=${3:-3}
. "$(dirname "$0")/instructions-lib.sh"
start_redis "$new"
printf '%-6s %-4s %-4s %s\n' round bin P instructions/GET
for round in $(seq "$rounds"); do
  for bin in old new; do
    path=$old; [ "$bin" = new ] && path=$new
    for p in 1 16; do
      printf '%-6s %-4s %-4s %d\n' "$round" "$bin" "$p" "$(per_get "$path" "$p")"
    done
  done
done
