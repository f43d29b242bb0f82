package reports

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/locksim/locksim/internal/realarm/parity"
	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/run"
)

// parityView is the report's "simulation vs real Redis" section, from a
// parity folder's parity.json (Options.Parity).
type parityView struct {
	Intro       string
	Chart       string // relative to the report folder
	Rows        []parityRow
	Unsupported []string
	Disagree    []string
}

type parityRow struct {
	Scenario, Lock, Expected string
	Sim, Real                string // "k/n verdict"
	Agree                    string // yes | NO
	Class                    string
}

// readParity reads Options.Parity's parity.json (an input error if it
// cannot).
func readParity(dir string) (*parity.Result, error) {
	r, err := parity.Read(dir)
	if err != nil {
		return nil, &sweep.InputError{Field: "parity", Err: fmt.Errorf("%s: %v (write it with 'locksim parity --out %s')", dir, run.UnwrapPathError(err), dir)}
	}
	return r, nil
}

// parityView draws the parity chart into dir/img and builds the section.
func (p *Plan) parityView(dir string) (*parityView, error) {
	r := p.parity
	if r == nil {
		return nil, nil
	}
	png, err := r.Chart()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "img"), 0o755); err != nil {
		return nil, err
	}
	if err := run.WriteFileAtomic(filepath.Join(dir, "img", "parity.png"), png); err != nil {
		return nil, err
	}
	v := &parityView{Chart: "img/parity.png",
		Intro: fmt.Sprintf("The same cells run in the simulator and against real redis-server processes on loopback (%s), both on the same world: "+
			"each scenario played so that the lock's TTL is %v (every duration scaled alike). A cell agrees when both give the same verdict and the 95%% Wilson intervals of their unsafe rates overlap. "+
			"Real runs are not replayable: the seed fixes the fault schedule and the workload's choices, not the interleaving. Node clock faults on real Redis: %s.",
			orDash(r.Redis), time.Duration(r.TTLNS), orDash(r.NodeClocks))}
	for _, c := range r.Cells {
		if isConsensusLock(c.Lock) {
			continue // their own section (consensus.go)
		}
		if c.NotSupported != "" {
			v.Unsupported = append(v.Unsupported, fmt.Sprintf("%s × %s: %s", c.Scenario, c.Lock, c.NotSupported))
			continue
		}
		row := parityRow{Scenario: c.Scenario, Lock: c.Lock, Expected: orDash(c.Expected),
			Sim: fmt.Sprintf("%d/%d %s", c.SimUnsafe, c.SimRuns, c.SimVerdict), Real: fmt.Sprintf("%d/%d %s", c.RealUnsafe, c.RealRuns, c.RealVerdict), Agree: "yes", Class: "safe"}
		if !c.Agree {
			row.Agree, row.Class = "NO", "unsafe"
			v.Disagree = append(v.Disagree, c.Scenario+" × "+c.Lock)
		}
		v.Rows = append(v.Rows, row)
	}
	if len(v.Rows) == 0 && len(v.Unsupported) == 0 {
		return nil, nil // a parity folder of consensus cells only
	}
	return v, nil
}

func orDash[S ~string](s S) string {
	if s == "" {
		return "-"
	}
	return string(s)
}
