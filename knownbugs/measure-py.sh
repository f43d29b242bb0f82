#!/bin/sh
# knownbugs/measure-py.sh DRIVER LOCK SCENARIO TTL N [JOBS]
# Runs seeds 1..N of one real-arm cell (locksim run --backend real) and
# prints "bad/runs" where bad counts runs whose verdict is unsafe (exit 1),
# then the other outcomes. LOCKSIM (default: locksim on PATH) is the binary;
# JOBS runs at once (default 1). Each run's summary is kept in
# $OUT/seed-N.txt (OUT default: a temp dir, printed).
set -u
driver=$1 lock=$2 scenario=$3 ttl=$4 n=$5 jobs=${6:-1}
bin=${LOCKSIM:-locksim}
out=${OUT:-$(mktemp -d /tmp/measure-py.XXXXXX)}
mkdir -p "$out"
seq 1 "$n" | xargs -P "$jobs" -I{} sh -c '"$0" run --backend real --driver "$1" --lock "$2" --scenario "$3" --ttl "$4" --seed {} >"$5/seed-{}.txt" 2>&1; echo $? >"$5/seed-{}.rc"' \
  "$bin" "$driver" "$lock" "$scenario" "$ttl" "$out"
bad=0 safe=0 other=0
for s in $(seq 1 "$n"); do
  case $(cat "$out/seed-$s.rc") in
    1) bad=$((bad + 1)) ;;
    0) safe=$((safe + 1)) ;;
    *) other=$((other + 1)) ;;
  esac
done
echo "$bad/$n unsafe (safe $safe, other $other); summaries in $out"
