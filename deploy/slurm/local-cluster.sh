#!/bin/bash
# A single-node Slurm cluster on this machine, for the Slurm test
# (cmd/locksim TestSlurmArray) and for trying deploy/slurm/ by hand.
# Needs root and Debian's slurm-wlm and munge:
#
#   apt-get install -y slurm-wlm munge
#   eval "$(deploy/slurm/local-cluster.sh start DIR)"   # exports SLURM_CONF
#   deploy/slurm/local-cluster.sh stop DIR
#
# Everything (config, state, logs, pid files) lives in DIR; munged uses the
# package's key. start waits until the node is idle.
set -eu
cmd=${1:?usage: local-cluster.sh start|stop DIR}
dir=${2:?usage: local-cluster.sh start|stop DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf=$dir/slurm.conf
host=$(hostname -s)
case $cmd in
start)
	for b in munged slurmctld slurmd sbatch sinfo; do
		command -v $b >/dev/null || { echo "local-cluster.sh: $b not found (apt-get install -y slurm-wlm munge)" >&2; exit 2; }
	done
	mkdir -p "$dir/state" "$dir/spool" /run/munge
	if [ ! -s /etc/munge/munge.key ]; then
		mungekey --create --keyfile /etc/munge/munge.key 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
		chown munge:munge /etc/munge/munge.key 2>/dev/null || true
		chmod 400 /etc/munge/munge.key
	fi
	chown munge:munge /run/munge 2>/dev/null || true
	if ! munge -n >/dev/null 2>&1; then
		munged --force --pid-file="$dir/munged.pid" --socket=/run/munge/munge.socket.2 >&2 2>&1 || true
	fi
	cpus=$(nproc)
	cat >"$conf" <<CONF
ClusterName=locksimtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
	export SLURM_CONF=$conf
	slurmctld -f "$conf" -c
	slurmd -f "$conf"
	for _ in $(seq 60); do
		if sinfo -h -o %t 2>/dev/null | grep -qE '^idle'; then
			echo "export SLURM_CONF=$conf"
			exit 0
		fi
		sleep 1
	done
	echo "local-cluster.sh: the node did not become idle; logs in $dir" >&2
	sinfo >&2 || true
	exit 1
	;;
stop)
	for p in slurmd slurmctld munged; do
		[ -f "$dir/$p.pid" ] || continue
		pid=$(cat "$dir/$p.pid")
		kill "$pid" 2>/dev/null || continue
		for _ in $(seq 100); do # wait until it has exited (it writes its state on the way out)
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	done
	;;
*)
	echo "usage: local-cluster.sh start|stop DIR" >&2
	exit 64
	;;
esac
