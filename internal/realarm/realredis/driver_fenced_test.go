package realredis

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/run"
)

// TestDriverFencedNoToken: in fencing's world (a storage that fences on a
// token) a driver whose acquire ok carries no token ends its client with
// an error naming the driver, the request and the line; the verdict is
// unknown, and no process or temp dir is left.
func TestDriverFencedNoToken(t *testing.T) {
	requireRedis(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	bin := t.TempDir()
	pidFile := filepath.Join(bin, "pid")
	exe := script(t, bin, "driver-notoken", "echo $$ > "+pidFile+"\nread l\necho '{\"re\":\"start\",\"result\":\"ok\"}'\nread l\necho '{\"re\":\"acquire\",\"result\":\"ok\",\"value\":\"v1\"}'\nsleep 1003.5\n")
	d, err := ResolveDriver(exe)
	if err != nil {
		t.Fatal(err)
	}
	j := short(t, "no-faults", "fencing", 1)
	if err := j.WithDriver(d); err != nil {
		t.Fatal(err)
	}
	jd, err := j.RunAndJudge(context.Background(), tmp)
	if err != nil {
		t.Fatal(err)
	}
	if jd.Check.Verdict != checker.VerdictUnknown || jd.Err == nil {
		t.Fatalf("verdict %s, err %v; want unknown with an error", jd.Check.Verdict, jd.Err)
	}
	for _, w := range []string{"driver-notoken", "request acquire", "fences on a token", `"value\":\"v1\"`} {
		if !strings.Contains(jd.Err.Error(), w) {
			t.Errorf("error does not say %q: %v", w, jd.Err)
		}
	}
	gone(t, pidFile, "sleep 1003.5")
	empty(t, tmp)
}

// TestDriverFencing: drivers/python-fencing in fencing's world under
// pause-after-check: the harness hands it storage commands with its
// token, and the paused holder's stale operations are refused by the
// storage (its fenced records), as for the Go fencing; the verdict is
// safe. Not under -short: one real run of ~9 s.
func TestDriverFencing(t *testing.T) {
	if testing.Short() {
		t.Skip("one real run of ~9 s")
	}
	requirePythonRedis(t)
	j, err := Build(run.Spec{Scenario: "pause-after-check", Lock: "fencing", Seed: 1}, DefaultTTL)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.WithDriver(repoDriver(t, "python-fencing")); err != nil {
		t.Fatal(err)
	}
	jd, err := j.RunAndJudge(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	fenced, tokens := 0, 0
	for _, e := range jd.Result.History {
		if (e.Kind == event.KindStoreRead || e.Kind == event.KindStoreWrite) && e.Result == event.ResultFenced {
			fenced++
		}
		if e.Op == event.OpAcquire && e.Kind == event.KindOK && e.Token > 0 {
			tokens++
		}
	}
	t.Logf("verdict %s %v; %d acquisitions with a token, %d operations fenced", jd.Verdict(), jd.Check.Reasons, tokens, fenced)
	if jd.Err != nil || jd.Check.Verdict != checker.VerdictSafe || tokens == 0 || fenced == 0 {
		t.Errorf("verdict %s (err %v), %d tokens, %d fenced: want safe, with tokens and the stale holder's operations fenced", jd.Check.Verdict, jd.Err, tokens, fenced)
	}
}
