// Package sweep runs many judged runs and keeps their results: the cross
// product of parameter values × locks × seeds of one scenario (a Spec),
// one run.Spec a job, on parallel runners, into a results folder.
//
// The folder is the sweep's state. sweep.json names the sweep; a rerun
// into the same folder must name the same one, and then it resumes:
// results.jsonl holds one Line a finished job, appended in job order by
// an ordered pool (RunOrdered) whatever order the runners finish in, so
// the file is the same bytes however it was run (workers, shards,
// resumes, interruptions). A torn last line (the process died mid-write)
// is cut off and that job runs again. A folder is locked while a sweep
// writes it. When every job is there, Finish writes results.csv, the rate
// table (95% Wilson intervals) and the charts.
//
// Shards (Spec.Shard of Spec.Shards) split a sweep across machines by job
// index; Merge joins their folders into the unsharded result, byte for
// byte.
//
// A Runner runs one job at a time: InProcess in a bubble of this process,
// or a Child, a worker process speaking one JSON line per job each way
// (ServeWorker is its other end). The report (package reports) runs its
// matrix through the same runners, pool and tallies.
package sweep
