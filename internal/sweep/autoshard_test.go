package sweep

import (
	"strings"
	"testing"
)

func TestAutoShard(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		i, n int
		err  string
	}{
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "SLURM_ARRAY_TASK_MIN": "0"}, i: 1, n: 2},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "5", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "3", "SLURM_ARRAY_TASK_STEP": "1"}, i: 2, n: 4},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "3", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_STEP": "2"}, err: "contiguous"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "0"}, err: "SLURM_ARRAY_TASK_COUNT is not"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "2"}, err: "want 0 <= i < n"},
		{env: map[string]string{"JOB_COMPLETION_INDEX": "3", "LOCKSIM_SHARDS": "4"}, i: 3, n: 4},
		{env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, err: "LOCKSIM_SHARDS"},
		{env: map[string]string{"JOB_COMPLETION_INDEX": "x", "LOCKSIM_SHARDS": "4"}, err: "not a number"},
		{env: map[string]string{}, err: "neither a Slurm array task"},
		// Both engines' variables: the same shard is taken, different
		// ones are refused naming both (Slurm's used to be taken).
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "1", "LOCKSIM_SHARDS": "2"}, i: 1, n: 2},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "0", "LOCKSIM_SHARDS": "2"},
			err: "the Slurm array task is shard 1 of 2 (SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_COUNT=2) but the Kubernetes Indexed Job says 0 of 2 (JOB_COMPLETION_INDEX=0, LOCKSIM_SHARDS=2)"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "1", "LOCKSIM_SHARDS": "4"}, err: "says 1 of 4"},
		{env: map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_COUNT": "2", "JOB_COMPLETION_INDEX": "1"}, err: "LOCKSIM_SHARDS"},
	} {
		i, n, err := AutoShard(func(k string) string { return c.env[k] })
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: err %v, want one with %q", c.env, err, c.err)
			}
			continue
		}
		if err != nil || i != c.i || n != c.n {
			t.Errorf("%v: %d/%d, %v; want %d/%d", c.env, i, n, err, c.i, c.n)
		}
	}
}
