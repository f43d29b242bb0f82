package reports

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locksim/locksim/sim"
)

// TestIndexWaitReading: the index says in one sentence what WAIT buys and
// does not, with the WAIT design's measured rates beside the same design
// without WAIT, from the cells that ran (wait-ack-lost: the acknowledging
// replica is not the one promoted; wait-ack-promoted: it is), and only
// scenarios where a failover can lose a write (not no-faults).
func TestIndexWaitReading(t *testing.T) {
	p, err := NewPlan(Options{Seeds: 3, Scenarios: []string{"no-faults", "wait-ack-lost", "wait-ack-promoted"}, Locks: []string{"set-nx-wait", "primary-replica"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := Stage(filepath.Join(t.TempDir(), "report"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Discard()
	dir := out.Dir()
	if err := p.Run(context.Background(), sim.TestBubble(t), dir, Exec{Workers: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	i := strings.Index(page, "What WAIT buys")
	if i < 0 {
		t.Fatal("index has no WAIT sentence")
	}
	if sentence, _, _ := strings.Cut(page[i:], "</p>"); strings.Contains(sentence, "no-faults") {
		t.Errorf("the WAIT sentence names no-faults, where no replica is lost: %s", sentence)
	}
	for _, want := range []string{
		"<b>What WAIT buys.</b> WAIT blocks a write until replicas acknowledge it",
		"is still lost. Measured: set-nx-wait is unsafe in wait-ack-lost ",
		"(without WAIT, primary-replica: wait-ack-lost ",
		" and safe in wait-ack-promoted (0 of 3)",
	} {
		if !strings.Contains(page, want) {
			i := strings.Index(page, "What WAIT buys")
			t.Errorf("index lacks %q; its WAIT sentence: %q", want, page[max(0, i):min(len(page), max(0, i)+900)])
		}
	}
}
