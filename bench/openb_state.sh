# Sourced by the bench scripts (defrag_bounds.sh, defrag_refine.sh,
# defrag_value.sh, free_split.sh) after they set BIN. Sets OPENB (default
# ../shared/traces/openb; without it the script prints "skipped" and exits
# 0) and `work`, a folder removed on exit, and defines
#   openb_state SEED FILE [POLICY] [TRACE]
# which writes to FILE the state POLICY (default fgd) leaves after the
# arrivals of openb_pod_list_TRACE.csv (default: default) at tune 1.3 with
# that seed (gpupack simulate --save-state).
OPENB=${OPENB:-../shared/traces/openb}
[ -d "$OPENB" ] || { echo "skipped: $OPENB not found (set OPENB=DIR)"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
openb_state() {
  "$BIN" simulate --nodes "$OPENB/openb_node_list_gpu_node.csv" --pods "$OPENB/openb_pod_list_${4:-default}.csv" \
    --policy "${3:-fgd}" --seeds "$1" --tune 1.3 --quiet --save-state "$2" --out "$work/sim" > /dev/null
}
