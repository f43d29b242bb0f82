package faults_test

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/faults"
)

// A fault is a value: its kind, when it starts, how long it lasts, whom it
// hits. Its String is the one line the trace and the summaries show.
func Example() {
	fs := []faults.Fault{
		{Kind: faults.ClockJump, Start: 3 * time.Second, Targets: []string{"n2"}, Jump: 20 * time.Second},
		{Kind: faults.ClientPause, Start: time.Second, Duration: 4500 * time.Millisecond, Targets: []string{"c0"}, At: "after-check"},
	}
	faults.Sort(fs)
	for _, f := range fs {
		fmt.Printf("%s  [%s]\n", f, f.Param())
	}
	// Output:
	// client-pause@1s+4.5s c0 at after-check  []
	// clock-jump@3s n2 20s  [+20s]
}
