#!/bin/bash
# Submit a locksim sweep as an N-task Slurm job array and its merge step:
#
#   deploy/slurm/submit.sh N OUT [sweep flags...]
#   deploy/slurm/submit.sh 4 /shared/redlock --locks redlock --seeds 1000
#
# OUT must be on a file system every node sees. LOCKSIM names the binary
# (default: locksim on the nodes' PATH). Prints the merge job's id; the
# merged results are OUT/merged/results.jsonl.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
n=${1:?usage: submit.sh N OUT [sweep flags...]}
out=${2:?usage: submit.sh N OUT [sweep flags...]}
shift 2
mkdir -p "$out"
array=$(sbatch --parsable --export=ALL --chdir="$out" --array=0-$((n - 1)) "$here/sweep.sbatch" "$out" "$@")
array=${array%%;*}
sbatch --parsable --export=ALL --chdir="$out" --dependency=afterok:"$array" "$here/merge.sbatch" "$out"
