package parity

import "github.com/locksim/locksim/checker"

// Expectation is what a library is expected to do in one scenario, and
// why (from its code). A driver's are in its folder's expectations file
// (ExpectFileName, expectfile.go), written before measuring; Go's are the
// scenario files' agreed outcomes.
type Expectation struct {
	Verdict checker.Verdict `json:"verdict"` // safe | unsafe | liveness
	Why     string          `json:"why"`
}

// control is the driver the table compares with Go set-nx-cad
// (controlChecks): plain redis-py issuing set-nx-cad's commands
// (drivers/python-set-nx-cad/driver.py).
const control = "python-set-nx-cad"
