package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/locksim/locksim/sim"
)

// k8sDoc is what the test reads of a manifest.
type k8sDoc struct {
	Kind string `yaml:"kind"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Args []string `yaml:"args"`
					Env  []struct {
						Name      string `yaml:"name"`
						ValueFrom struct {
							FieldRef struct {
								FieldPath string `yaml:"fieldPath"`
							} `yaml:"fieldRef"`
						} `yaml:"valueFrom"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func readJob(t *testing.T, name string) k8sDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", name))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range bytes.Split(data, []byte("\n---\n")) {
		var d k8sDoc
		if err := yaml.Unmarshal(part, &d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.Kind == "Job" {
			if len(d.Spec.Template.Spec.Containers) != 1 {
				t.Fatalf("%s: want one container", name)
			}
			return d
		}
	}
	t.Fatalf("%s: no Job", name)
	return k8sDoc{}
}

// TestDeployManifests: every shard's command in deploy/sweep-job.yaml is a
// valid sweep (checked by the CLI's own flag handling, without running it),
// the shards are 0..completions-1 of completions, and deploy/merge-job.yaml
// merges exactly their directories.
func TestDeployManifests(t *testing.T) {
	job := readJob(t, "sweep-job.yaml")
	if job.Spec.CompletionMode != "Indexed" || job.Spec.Completions < 1 {
		t.Fatalf("sweep job: completionMode %q, completions %d", job.Spec.CompletionMode, job.Spec.Completions)
	}
	c := job.Spec.Template.Spec.Containers[0]
	if len(c.Env) != 1 || c.Env[0].Name != "SHARD" || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Fatalf("sweep job: SHARD must come from the completion index: %+v", c.Env)
	}
	n := job.Spec.Completions
	root := t.TempDir()
	noRun := func(func(sim.Bubble) int) int { return exitSafe }
	var shardDirs []string
	for i := 0; i < n; i++ {
		var args []string
		out := ""
		for _, a := range c.Args {
			a = strings.ReplaceAll(a, "$(SHARD)", strconv.Itoa(i))
			if v, ok := strings.CutPrefix(a, "--out="); ok {
				out = v
				a = "--out=" + filepath.Join(root, strings.TrimPrefix(v, "/results/"))
			}
			if v, ok := strings.CutPrefix(a, "--shard="); ok && v != strconv.Itoa(i)+"/"+strconv.Itoa(n) {
				t.Errorf("shard %d runs --shard=%s, want %d/%d", i, v, i, n)
			}
			args = append(args, a)
		}
		if args[0] != "sweep" || !strings.HasPrefix(out, "/results/") {
			t.Fatalf("shard %d: args %v (want a sweep writing under /results/)", i, args)
		}
		shardDirs = append(shardDirs, out)
		var stdout, stderr bytes.Buffer
		if code := execute(args, &stdout, &stderr, noRun); code != exitSafe || stderr.Len() > 0 {
			t.Errorf("shard %d: %v: exit %d, %s", i, args, code, stderr.String())
		}
	}
	merge := readJob(t, "merge-job.yaml").Spec.Template.Spec.Containers[0].Args
	if len(merge) < 2 || merge[0] != "merge" || !strings.HasPrefix(merge[1], "--out=/results/") {
		t.Fatalf("merge job args %v", merge)
	}
	if got := strings.Join(merge[2:], " "); got != strings.Join(shardDirs, " ") {
		t.Errorf("merge job joins %q, want the sweep's shards %q", got, strings.Join(shardDirs, " "))
	}
}
