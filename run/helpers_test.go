package run

import (
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/sim"
)

// runChecked runs cfg as a run of the named built-in scenario (its
// judging) and judges it; an incomplete run is an error.
func runChecked(b sim.Bubble, cfg sim.Config, scenario string, info locks.Info, opt checker.Options) (*Judged, error) {
	j, err := NewJob(scenario, info, cfg, opt).Run(b)
	if err == nil && j.Err != nil {
		err = j.Err
	}
	return j, err
}
