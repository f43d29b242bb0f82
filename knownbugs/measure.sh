#!/bin/sh
# knownbugs/measure.sh DRIVER LOCK SCENARIO TTL N [VERDICT] [--careful]
# Runs `locksim run --backend real` for seeds 1..N with one driver folder
# and prints "bad/runs" for VERDICT (unsafe | liveness | crash; default
# unsafe), then every seed's verdict line. crash: the run's verdict line
# says unknown, and that a driver exited (docs/DRIVERS.md, Bad
# drivers). LOCKSIM (default: go run ./cmd/locksim) is the binary.
# Run from the repository's root.
set -u
driver=$1 lock=$2 scenario=$3 ttl=$4 n=$5 want=${6:-unsafe} careful=${7:-}
locksim=${LOCKSIM:-"go run ./cmd/locksim"}
bad=0 runs=0 lines=""
seed=1
while [ "$seed" -le "$n" ]; do
	out=$($locksim run --backend real --driver "$driver" --lock "$lock" --scenario "$scenario" --seed "$seed" --ttl "$ttl" $careful 2>&1)
	v=$(printf '%s\n' "$out" | sed -n 's/^verdict: *//p' | head -1)
	[ -n "$v" ] || v="no verdict: $(printf '%s\n' "$out" | tail -1)"
	case $want in
	crash) case $v in unknown*"the driver exited"*) bad=$((bad + 1)) ;; esac ;;
	*) case $v in "$want"*) bad=$((bad + 1)) ;; esac ;;
	esac
	runs=$((runs + 1))
	lines="$lines
seed $seed: $v"
	seed=$((seed + 1))
done
echo "$bad/$runs $want ($driver, --lock $lock, --scenario $scenario, --ttl $ttl $careful)"
printf '%s\n' "$lines" | sed '1d' | cut -c1-200
