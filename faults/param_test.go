package faults

import (
	"testing"
	"time"
)

// TestParam: the label part of each kind's parameter, signed where the
// sign matters (a positive jump prints "+", which Duration.String omits).
func TestParam(t *testing.T) {
	for _, c := range []struct {
		f    Fault
		want string
	}{
		{Fault{Kind: ClockJump, Jump: -16 * time.Second}, "-16s"},
		{Fault{Kind: ClockJump, Jump: 20 * time.Second}, "+20s"},
		{Fault{Kind: ClockDrift, DriftPPM: 120000}, "+120000ppm"},
		{Fault{Kind: ClockDrift, DriftPPM: -5}, "-5ppm"},
		{Fault{Kind: Delay, Delay: 2500 * time.Millisecond}, "+2.5s"},
		{Fault{Kind: Loss, LossProb: 0.34}, "p=0.34"},
		{Fault{Kind: Partition}, ""},
		{Fault{Kind: Crash, Duration: time.Second}, ""},
	} {
		if got := c.f.Param(); got != c.want {
			t.Errorf("%v: Param() = %q, want %q", c.f, got, c.want)
		}
	}
}
