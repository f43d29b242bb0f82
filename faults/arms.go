package faults

// Arms is what waits on one client for it to reach a point (Fault.At):
// targeted pauses, and faults of other kinds armed on it (Fault.On). The
// simulator and the real arm both keep one per client and ask it, at each
// point the client reaches, what begins there (Reach), so the rule is
// written once: every fault armed at the point fires, in the order they
// were armed (their starts), and the first pause armed at the point (one
// per reach) stops the client.
type Arms struct {
	faults []ArmedFault
	pauses []ArmedPause
}

// ArmedFault is fault I of the schedule (0-based), F, waiting for its point.
type ArmedFault struct {
	I int
	F Fault
}

// ArmedPause is a targeted client pause of D nanoseconds waiting for its
// point; Fault is its 1-based number in the schedule (the event's).
type ArmedPause struct {
	Point string
	D     int64
	Desc  string
	Fault int
}

// ArmFault arms fault i, f, at f.At.
func (a *Arms) ArmFault(i int, f Fault) { a.faults = append(a.faults, ArmedFault{I: i, F: f}) }

// ArmPause arms the targeted client pause f (fault i, 0-based) at f.At.
func (a *Arms) ArmPause(i int, f Fault) {
	a.pauses = append(a.pauses, ArmedPause{Point: f.At, D: int64(f.Duration), Desc: f.String(), Fault: i + 1})
}

// Reach removes and returns what begins at point: the faults armed there
// (none or more) and the first pause armed there (nil if none).
func (a *Arms) Reach(point string) (fire []ArmedFault, pause *ArmedPause) {
	if len(a.faults) > 0 {
		kept := a.faults[:0:0]
		for _, f := range a.faults {
			if f.F.At == point {
				fire = append(fire, f)
			} else {
				kept = append(kept, f)
			}
		}
		a.faults = kept
	}
	for i, p := range a.pauses {
		if p.Point == point {
			a.pauses = append(a.pauses[:i:i], a.pauses[i+1:]...)
			return fire, &p
		}
	}
	return fire, nil
}

// Pauses is how many pauses are still armed.
func (a *Arms) Pauses() int { return len(a.pauses) }

// Empty reports whether nothing is armed.
func (a *Arms) Empty() bool { return len(a.faults) == 0 && len(a.pauses) == 0 }

// Clear disarms everything (the heal).
func (a *Arms) Clear() { a.faults, a.pauses = nil, nil }
