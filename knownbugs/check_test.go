package knownbugs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/internal/realarm/realredis"
	"github.com/locksim/locksim/run"
)

// TestKnownBugs reruns the quick entries (all reproduced ones with
// LOCKSIM_KNOWNBUGS_ALL=1): the buggy side must show the entry's verdict
// and the fixed side (or its twin) must not, so a harness change that
// loses a known bug fails here. Not under -short: it starts real
// redis-server processes, drivers and nested modules' tests (.ci/run runs
// it on its own as the known-bugs slice).
func TestKnownBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("the known-bugs slice runs real servers and nested modules; .ci/run runs it without -short")
	}
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	every := os.Getenv("LOCKSIM_KNOWNBUGS_ALL") == "1"
	var modules, drivers []Bug
	for _, b := range all {
		switch {
		case !b.Reproduced() || (!b.Quick && !every):
		case b.Check.Kind == CheckGoTest:
			modules = append(modules, b)
		case b.Check.Kind == CheckDriver:
			drivers = append(drivers, b)
		}
	}
	ran := len(modules) + len(drivers)
	// The nested modules first, side by side (each builds and runs the
	// simulator); then the real arm, one entry at a time and alone (its
	// timing is what a driver entry measures).
	t.Run("modules", func(t *testing.T) {
		for _, b := range modules {
			t.Run(b.ID, func(t *testing.T) {
				t.Parallel()
				checkGoTest(t, b)
			})
		}
	})
	for _, b := range drivers {
		t.Run(b.ID, func(t *testing.T) { checkDriver(t, b) })
	}
	if ran == 0 {
		t.Fatal("no quick entry to rerun: the slice would pass having checked nothing")
	}
}

// checkGoTest runs each nested module's own test, which asserts its side's
// outcome (the buggy module finds the bug, the fixed one stays safe).
func checkGoTest(t *testing.T, b Bug) {
	for _, dir := range b.Check.Modules() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		args := []string{"test", "-count=1", "-timeout", "4m"}
		if b.Check.Tags != "" {
			args = append(args, "-tags", b.Check.Tags)
		}
		cmd := exec.CommandContext(ctx, "go", append(args, "./...")...)
		cmd.Dir = filepath.Join("..", dir)
		// The module's test files (porcupine pages) go to a temp dir of
		// this test's own, removed after it.
		cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
		// Killing go on the deadline may leave its test binary holding the
		// output pipe: stop waiting for it after a while.
		cmd.WaitDelay = 10 * time.Second
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("%s: go %s ./... in %s: %v\n%s", b.ID, strings.Join(args, " "), dir, err, tail(out))
		}
	}
}

// checkDriver runs seeds 1..Check.Seeds of the entry's world on the real
// arm with the buggy driver, then the fixed one: at least one buggy run
// must show the verdict, no fixed run may.
func checkDriver(t *testing.T, b Bug) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatal("redis-server is not installed (.ci/run installs it)")
		}
		t.Skip("redis-server is not installed")
	}
	c := b.Check
	ttl, err := time.ParseDuration(c.TTL)
	if err != nil {
		t.Fatalf("%s: ttl %q: %v", b.ID, c.TTL, err)
	}
	buggy := 0
	for seed := 1; seed <= c.Seeds; seed++ {
		got, why := driverRun(t, b, c.BuggyDriver, ttl, uint64(seed))
		t.Logf("buggy %s seed %d: %s %s", b.Buggy, seed, got, why)
		if got == b.Verdict {
			buggy++
		}
	}
	if buggy == 0 {
		t.Errorf("%s: the buggy side (%s) showed no %s verdict in %d seeds; measured %s", b.ID, b.Buggy, b.Verdict, c.Seeds, b.Measured.Buggy)
	}
	for seed := 1; seed <= c.Seeds; seed++ {
		got, why := driverRun(t, b, c.FixedDriver, ttl, uint64(seed))
		t.Logf("safe side %s seed %d: %s %s", b.SafeSide(), seed, got, why)
		if got != "safe" {
			t.Errorf("%s: the safe side (%s) seed %d: %s %s", b.ID, b.SafeSide(), seed, got, why)
		}
	}
}

// driverRun runs one seed and classifies it: unsafe, liveness, crash (the
// driver process exited), safe or unknown, with the reasons.
func driverRun(t *testing.T, b Bug, driver string, ttl time.Duration, seed uint64) (string, string) {
	t.Helper()
	d, err := realredis.ResolveDriver(filepath.Join("..", driver))
	if err != nil {
		t.Fatalf("%s: %v", b.ID, err)
	}
	scenario := b.Check.Scenario
	if strings.HasSuffix(scenario, ".yaml") {
		scenario = filepath.Join("..", scenario)
	}
	spec := run.Spec{Scenario: scenario, Lock: b.Check.Lock, Seed: seed}
	spec.Params.Careful = b.Check.Careful
	j, err := realredis.Build(spec, ttl)
	if err != nil {
		t.Fatalf("%s: %v", b.ID, err)
	}
	if err := j.WithDriver(d); err != nil {
		t.Fatalf("%s: %v", b.ID, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	jd, err := j.RunAndJudge(ctx, "")
	if err != nil {
		t.Fatalf("%s seed %d: %v", b.ID, seed, err)
	}
	if jd.Err != nil && strings.Contains(jd.Err.Error(), "the driver exited") {
		// Only the library's own failure is the bug's crash: a driver that
		// dies of anything else (a missing module, a protocol mistake) is
		// unknown.
		if sig := b.Check.CrashSignature; sig != "" && strings.Contains(jd.Err.Error(), sig) {
			return "crash", jd.Err.Error()
		}
		return "unknown", jd.Err.Error()
	}
	v := jd.Verdict()
	why := fmt.Sprint(jd.Check.Reasons)
	if jd.Err != nil {
		why += " (" + jd.Err.Error() + ")"
	}
	switch v {
	case checker.VerdictUnsafe, checker.VerdictLiveness, checker.VerdictSafe:
		return string(v), why
	}
	return "unknown", why
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		return "..." + string(b[len(b)-n:])
	}
	return string(b)
}
