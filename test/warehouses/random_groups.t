#!/usr/bin/env bash
#
# The randomized differential test over a sync group: random.t with its
# copies (one per hot_window_check, the first keeping history) made one
# group, each cycle one sync_group(). After every group cycle every member
# equals the warehouse's newest version of every key, and at the end the
# history of the first member answers as_of and changes at every cut.
#
#   TS_RANDOM_GROUP_CYCLES  cycles per warehouse after the first load (8)
#   and random.t's TS_RANDOM_SEED, TS_WAREHOUSES, TS_HOT_WINDOW_CHECKS.

export TS_RANDOM_GROUP=1
export TS_RANDOM_CYCLES=${TS_RANDOM_GROUP_CYCLES:-8}
exec "$(dirname "$0")/random.t"
