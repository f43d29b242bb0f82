package realredis

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// requirePythonRedis skips a test that runs a Python driver when Debian's
// python3 with redis-py is absent (CI installs python3-redis and fails
// instead, LOCKSIM_CI=1).
func requirePythonRedis(t *testing.T) {
	t.Helper()
	requireRedis(t)
	if err := exec.Command("/usr/bin/python3", "-c", "import redis").Run(); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatalf("drivers: /usr/bin/python3 with redis-py: %v (apt-get install -y python3-redis)", err)
		}
		t.Skipf("Python drivers skipped: /usr/bin/python3 cannot import redis (apt-get install -y python3-redis): %v", err)
	}
}

// requireNodeRedlock skips a test of drivers/node-redlock when node or its
// node_modules (npm ci in the folder) is absent; in CI it fails.
func requireNodeRedlock(t *testing.T) { requireNodeDriver(t, "node-redlock", "redlock") }

// requireNodeDriver skips a test of drivers/<name> when node or the
// folder's node_modules/<module> (npm ci in the folder) is absent; in CI
// it fails.
func requireNodeDriver(t *testing.T, name, module string) {
	t.Helper()
	_, errNode := exec.LookPath("node")
	_, errMods := os.Stat(filepath.Join("..", "..", "..", "drivers", name, "node_modules", module))
	if err := errors.Join(errNode, errMods); err != nil {
		if os.Getenv("LOCKSIM_CI") != "" {
			t.Fatalf("drivers/%s: %v (apt-get install -y nodejs; cd drivers/%s && npm ci)", name, err, name)
		}
		t.Skipf("drivers/%s skipped: %v (apt-get install -y nodejs; cd drivers/%s && npm ci)", name, err, name)
	}
}

// nodeModules is each Node driver's library, as npm ci installs it.
var nodeModules = map[string]string{"node-redlock": "redlock", "node-redis-semaphore": "redis-semaphore"}

func repoDriver(t *testing.T, name string) *Driver {
	t.Helper()
	d, err := ResolveDriver(filepath.Join("..", "..", "..", "drivers", name))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestLibraryDrivers is CI's driver slice: each driver in drivers/ is safe
// with no faults, and a pause at the after-check point it reports lands.
func TestLibraryDrivers(t *testing.T) {
	requireRedis(t)
	for _, name := range []string{"python-set-nx-cad", "python-redis-py", "node-redlock", "node-redis-semaphore"} {
		t.Run(name, func(t *testing.T) {
			if mod, ok := nodeModules[name]; ok {
				requireNodeDriver(t, name, mod)
			} else {
				requirePythonRedis(t)
			}
			// TTL 500 ms: at 200 ms a loaded machine's scheduling delays
			// are a real pause of the driver's process.
			j, err := Build(run.Spec{Scenario: "no-faults", Lock: "set-nx-cad", Seed: 1}, DefaultTTL)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.WithDriver(repoDriver(t, name)); err != nil {
				t.Fatal(err)
			}
			jd, err := j.RunAndJudge(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			oks := 0
			for _, e := range jd.Result.History {
				if e.Kind == event.KindOK && e.Op == event.OpWrite {
					oks++
				}
			}
			if jd.Check.Verdict != checker.VerdictSafe || oks == 0 {
				t.Fatalf("no-faults: verdict %s (%v), %d writes, err %v; want safe with writes", jd.Check.Verdict, jd.Check.Reasons, oks, jd.Err)
			}
			// Two clients, not the scenario's five: a lock with no fairness
			// (redis-semaphore's three tries) let four rivals starve c0
			// through all three pause windows (seen in CI); with one
			// rival c0 still loses the lock to it when paused.
			j, err = Build(run.Spec{Scenario: "pause-after-check", Lock: "set-nx-cad", Seed: 1,
				Params: scenarios.Params{Clients: 2}}, DefaultTTL)
			if err != nil {
				t.Fatal(err)
			}
			if err := j.WithDriver(repoDriver(t, name)); err != nil {
				t.Fatal(err)
			}
			jd, err = j.RunAndJudge(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			paused := 0
			for _, e := range jd.Result.History {
				if e.Kind == event.KindPause && e.Proc == "c0" {
					paused++
				}
			}
			if paused == 0 {
				for _, e := range jd.Result.History {
					if e.Proc == "c0" && e.T < 3e9 {
						t.Logf("%+v", e)
					}
				}
			}
			if paused == 0 || jd.Check.Verdict == checker.VerdictUnknown {
				t.Fatalf("pause-after-check: %d pauses of c0 at its reported point, verdict %s (err %v)", paused, jd.Check.Verdict, jd.Err)
			}
			t.Logf("pause-after-check: %d pauses landed, verdict %s", paused, jd.Check.Verdict)
		})
	}
}

// TestDriverFaketime: a client clock jump reaches a Python driver through
// libfaketime (time.time and time.monotonic both move).
func TestDriverFaketime(t *testing.T) {
	requireRedis(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "times")
	prog := filepath.Join(dir, "driver.py")
	src := `#!/usr/bin/python3
import json, sys, time
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "acquire":
        with open(` + strconv.Quote(out) + `, "a") as f:
            f.write("%f %f\n" % (time.time(), time.monotonic()))
    print(json.dumps({"re": req["type"], "result": "ok" if req["type"] != "acquire" else "fail", "error": "measuring"}), flush=True)
`
	if err := os.WriteFile(prog, []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
	scen := filepath.Join(dir, "jump.yaml")
	if err := os.WriteFile(scen, []byte(`id: client-jump
description: c0's clock jumps 40 TTL ahead at 2 TTL.
clients: {count: 1}
duration: 6ttl
liveness: 1s
faults:
  - {kind: clock-jump, start: 2ttl, jump: 40ttl, targets: [c0]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := Build(run.Spec{Scenario: scen, Lock: "set-nx-cad", Seed: 1}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ResolveDriver(prog)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	if _, err := j.RunAndJudge(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var maxWall, maxMono float64
	var pw, pm float64
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var w, m float64
		f := strings.Fields(l)
		w, _ = strconv.ParseFloat(f[0], 64)
		m, _ = strconv.ParseFloat(f[1], 64)
		if i > 0 {
			maxWall, maxMono = max(maxWall, w-pw), max(maxMono, m-pm)
		}
		pw, pm = w, m
	}
	// 40 TTL = 8 s of jump; acquire attempts are well under 1 s apart.
	if maxWall < 7 || maxMono < 7 {
		t.Fatalf("the jump did not reach the driver: largest step between readings: time.time %.2fs, time.monotonic %.2fs", maxWall, maxMono)
	}
	t.Logf("largest step between readings: time.time %.2fs, time.monotonic %.2fs", maxWall, maxMono)
}

// TestDriverSentinelWorld: in a Sentinel-managed world (primary-replica's)
// a driver is handed Sentinels, the master name and its routes instead of
// nodes: redis-py's Lock (through Sentinel.master_for) is safe with writes
// under no faults, and node-redlock refuses the world at start, naming
// why, so the run is unknown (never safe). Not under -short: two real
// replicated worlds.
func TestDriverSentinelWorld(t *testing.T) {
	if testing.Short() {
		t.Skip("two real replicated worlds")
	}
	requirePythonRedis(t)
	requireNodeRedlock(t)
	for _, name := range []string{"python-redis-py", "node-redlock"} {
		j, err := Build(run.Spec{Scenario: "no-faults", Lock: "primary-replica", Seed: 1}, DefaultTTL)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.WithDriver(repoDriver(t, name)); err != nil {
			t.Fatal(err)
		}
		jd, err := j.RunAndJudge(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		writes := 0
		for _, e := range jd.Result.History {
			if e.Kind == event.KindOK && e.Op == event.OpWrite {
				writes++
			}
		}
		switch name {
		case "node-redlock":
			if jd.Check.Verdict != checker.VerdictUnknown || jd.Err == nil || !strings.Contains(jd.Err.Error(), "Sentinel-managed primary") {
				t.Errorf("%s: verdict %s, err %v; want unknown, its refusal naming the Sentinel world", name, jd.Check.Verdict, jd.Err)
			}
		default:
			if jd.Check.Verdict != checker.VerdictSafe || writes == 0 {
				t.Errorf("%s: verdict %s (%v), %d writes, err %v; want safe with writes", name, jd.Check.Verdict, jd.Check.Reasons, writes, jd.Err)
			}
		}
	}
}
