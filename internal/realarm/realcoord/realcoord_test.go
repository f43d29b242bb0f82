package realcoord

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func startOrSkip(t *testing.T, kind Kind) *Ensemble {
	t.Helper()
	var me *MissingError
	if err := Check(kind); errors.As(err, &me) {
		t.Skipf("%v", err)
	}
	e, err := Start(context.Background(), kind, t.TempDir(), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	t.Logf("%s: 3 members serving with a leader after %v", kind, e.StartWall)
	return e
}

// TestEnsembleLeaderCrash starts each kind, kills its leader, sees
// another member lead, restarts the old one and sees it serve again.
func TestEnsembleLeaderCrash(t *testing.T) {
	for _, kind := range []Kind{Etcd, ZooKeeper} {
		t.Run(string(kind), func(t *testing.T) {
			if testing.Short() && kind == ZooKeeper {
				if _, err := exec.LookPath("java"); err != nil {
					t.Skip("no java")
				}
			}
			e := startOrSkip(t, kind)
			l := e.Leader()
			if l < 0 {
				t.Fatal("no leader after Start")
			}
			e.Kill(l)
			if !e.Down(l) {
				t.Fatalf("%s not down after Kill", e.Members[l].Name)
			}
			nl, err := e.waitLeader(time.Now().Add(30 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if nl == l {
				t.Fatalf("the killed member %d still leads", l)
			}
			if err := e.Restart(l); err != nil {
				t.Fatal(err)
			}
			if e.Down(l) {
				t.Fatal("restarted member is down")
			}
		})
	}
}

func TestCheckNamesPackage(t *testing.T) {
	err := (&MissingError{Kind: ZooKeeper, Missing: []string{"java"}}).Error()
	if want := "apt-get install -y zookeeper default-jre-headless"; !strings.Contains(err, want) {
		t.Fatalf("%q lacks %q", err, want)
	}
}
