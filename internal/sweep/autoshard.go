package sweep

import (
	"errors"
	"fmt"
	"strconv"
)

// AutoShard is "--shard auto": this task's shard i of n, read from the
// cluster engine's environment (getenv: os.Getenv):
//
//   - Slurm job arrays: SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT,
//     the shard being the task's place in the array (the id minus
//     SLURM_ARRAY_TASK_MIN); the array must be contiguous (step 1, e.g.
//     --array=0-3), or some shards would never run.
//   - Kubernetes Indexed Jobs: JOB_COMPLETION_INDEX, with the number of
//     completions in LOCKSIM_SHARDS (Kubernetes does not export it).
//
// When both are set they must name the same shard: which one is this
// task's is not for locksim to guess (a guess runs one shard twice and
// another never).
func AutoShard(getenv func(string) string) (i, n int, err error) {
	num := func(name string) (int, error) {
		v, err := strconv.Atoi(getenv(name))
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s=%q is not a number", name, getenv(name))
		}
		return v, nil
	}
	slurm := getenv("SLURM_ARRAY_TASK_ID") != ""
	k8s := getenv("JOB_COMPLETION_INDEX") != ""
	if slurm {
		if i, n, err = slurmShard(getenv, num); err != nil {
			return 0, 0, err
		}
	}
	if k8s {
		ki, kn, err := k8sShard(getenv, num)
		if err != nil {
			return 0, 0, err
		}
		if slurm && (ki != i || kn != n) {
			return 0, 0, fmt.Errorf("auto: the Slurm array task is shard %d of %d (SLURM_ARRAY_TASK_ID=%s, SLURM_ARRAY_TASK_COUNT=%s) but the Kubernetes Indexed Job says %d of %d (JOB_COMPLETION_INDEX=%s, LOCKSIM_SHARDS=%s): unset the engine's variables that are not this task's, or give --shard i/n",
				i, n, getenv("SLURM_ARRAY_TASK_ID"), getenv("SLURM_ARRAY_TASK_COUNT"), ki, kn, getenv("JOB_COMPLETION_INDEX"), getenv("LOCKSIM_SHARDS"))
		}
		i, n = ki, kn
	}
	if !slurm && !k8s {
		return 0, 0, errors.New("auto: neither a Slurm array task (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) nor a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, LOCKSIM_SHARDS) in the environment")
	}
	if n < 1 || n > 1_000_000 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("auto: shard %d of %d: want 0 <= i < n <= 1000000", i, n)
	}
	return i, n, nil
}

// slurmShard is a Slurm array task's shard (AutoShard).
func slurmShard(getenv func(string) string, num func(string) (int, error)) (i, n int, err error) {
	id, err := num("SLURM_ARRAY_TASK_ID")
	if err != nil {
		return 0, 0, err
	}
	if getenv("SLURM_ARRAY_TASK_COUNT") == "" {
		return 0, 0, errors.New("SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not")
	}
	if n, err = num("SLURM_ARRAY_TASK_COUNT"); err != nil {
		return 0, 0, err
	}
	lo := 0
	if getenv("SLURM_ARRAY_TASK_MIN") != "" {
		if lo, err = num("SLURM_ARRAY_TASK_MIN"); err != nil {
			return 0, 0, err
		}
	}
	if s := getenv("SLURM_ARRAY_TASK_STEP"); s != "" && s != "1" {
		return 0, 0, fmt.Errorf("SLURM_ARRAY_TASK_STEP=%s: the array must be contiguous (e.g. --array=0-3) or some shards never run", s)
	}
	return id - lo, n, nil
}

// k8sShard is a Kubernetes Indexed Job's shard (AutoShard).
func k8sShard(getenv func(string) string, num func(string) (int, error)) (i, n int, err error) {
	if i, err = num("JOB_COMPLETION_INDEX"); err != nil {
		return 0, 0, err
	}
	if getenv("LOCKSIM_SHARDS") == "" {
		return 0, 0, errors.New("JOB_COMPLETION_INDEX is set but LOCKSIM_SHARDS (the Job's completions) is not")
	}
	if n, err = num("LOCKSIM_SHARDS"); err != nil {
		return 0, 0, err
	}
	return i, n, nil
}
