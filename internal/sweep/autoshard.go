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
func AutoShard(getenv func(string) string) (i, n int, err error) {
	num := func(name string) (int, error) {
		v, err := strconv.Atoi(getenv(name))
		if err != nil || v < 0 {
			return 0, fmt.Errorf("%s=%q is not a number", name, getenv(name))
		}
		return v, nil
	}
	switch {
	case getenv("SLURM_ARRAY_TASK_ID") != "":
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
		i = id - lo
	case getenv("JOB_COMPLETION_INDEX") != "":
		if i, err = num("JOB_COMPLETION_INDEX"); err != nil {
			return 0, 0, err
		}
		if getenv("LOCKSIM_SHARDS") == "" {
			return 0, 0, errors.New("JOB_COMPLETION_INDEX is set but LOCKSIM_SHARDS (the Job's completions) is not")
		}
		if n, err = num("LOCKSIM_SHARDS"); err != nil {
			return 0, 0, err
		}
	default:
		return 0, 0, errors.New("auto: neither a Slurm array task (SLURM_ARRAY_TASK_ID, SLURM_ARRAY_TASK_COUNT) nor a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, LOCKSIM_SHARDS) in the environment")
	}
	if n < 1 || n > 1_000_000 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("auto: shard %d of %d: want 0 <= i < n <= 1000000", i, n)
	}
	return i, n, nil
}
