package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlurmArray brings up a single-node Slurm cluster on this machine
// (deploy/slurm/local-cluster.sh: root, Debian's slurm-wlm and munge),
// submits a small sweep as a 2-task job array with its merge step
// (deploy/slurm/submit.sh), and compares the merged results with the
// unsharded sweep's, byte for byte.
func TestSlurmArray(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster; run without -short")
	}
	// In CI (.ci/run sets LOCKSIM_CI and installs Slurm) a missing Slurm
	// is a failure, not a skip: the test must have run.
	skip := t.Skipf
	if os.Getenv("LOCKSIM_CI") != "" {
		skip = t.Fatalf
	}
	for _, b := range []string{"slurmctld", "slurmd", "sbatch", "munged"} {
		if _, err := exec.LookPath(b); err != nil {
			skip("Slurm is not installed (%s not found): apt-get install -y slurm-wlm munge, as root", b)
		}
	}
	if os.Geteuid() != 0 {
		skip("the local Slurm cluster's daemons run as root: run this test as root")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "locksim")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	slurm, _ := filepath.Abs(filepath.Join("..", "..", "deploy", "slurm"))
	cluster := filepath.Join(tmp, "cluster")
	out, err := exec.Command(filepath.Join(slurm, "local-cluster.sh"), "start", cluster).Output()
	if err != nil {
		t.Fatalf("local-cluster.sh start: %v (logs in %s)", err, cluster)
	}
	t.Cleanup(func() { exec.Command(filepath.Join(slurm, "local-cluster.sh"), "stop", cluster).Run() })
	conf := strings.TrimPrefix(strings.TrimSpace(string(out)), "export SLURM_CONF=")
	env := append(os.Environ(), "SLURM_CONF="+conf, "LOCKSIM="+bin)

	flags := []string{"--scenario", "no-faults", "--locks", "set-nx-cad,redlock", "--seeds", "3"}
	results := filepath.Join(tmp, "results")
	submit := exec.Command(filepath.Join(slurm, "submit.sh"), append([]string{"2", results}, flags...)...)
	submit.Env = env
	id, err := submit.Output()
	if err != nil {
		t.Fatalf("submit.sh: %v", err)
	}
	merge := strings.TrimSpace(string(id))
	deadline := time.Now().Add(5 * time.Minute)
	for {
		q := exec.Command("squeue", "-h", "-o", "%i %t")
		q.Env = env
		qs, _ := q.Output()
		if strings.TrimSpace(string(qs)) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the jobs did not finish in 5 minutes:\n%s", qs)
		}
		time.Sleep(time.Second)
	}
	merged, err := os.ReadFile(filepath.Join(results, "merged", "results.jsonl"))
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(results, "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
		t.Fatalf("merge job %s: no merged results: %v", merge, err)
	}
	for i := range 2 {
		if _, err := os.Stat(filepath.Join(results, "shard-"+string(rune('0'+i)), "results.jsonl")); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	whole := filepath.Join(tmp, "whole")
	if out, err := exec.Command(bin, append([]string{"sweep", "--out", whole}, flags...)...).CombinedOutput(); err != nil {
		t.Fatalf("the unsharded sweep: %v\n%s", err, out)
	}
	want, err := os.ReadFile(filepath.Join(whole, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 || !bytes.Equal(merged, want) {
		t.Fatalf("the merged shards (%d bytes) differ from the unsharded sweep (%d bytes)", len(merged), len(want))
	}
}
