package main

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/internal/sweep"
)

// FuzzParam: whatever sweep --param's value, sweep.ParseParam returns a
// known parameter's values or an error on one line, and never panics; the
// values are finite, distinct, at most sweep.MaxParamSteps of them for
// from:to:steps, and written back as a list they parse to the same values.
//
//	go test -run '^$' -fuzz FuzzParam ./cmd/locksim/
func FuzzParam(f *testing.F) {
	for _, s := range []string{"clients=1:10:10", "clients=1,2,5", "duration=500ms:5s:10", "duration=1,2.5", "pause=0:2:21",
		"repl-lag=1ms,2ms", "nodes=3", "liveness=1h:2h:2", "pause=0.1,0.3", "clients=1:2:1000", "x=1", "clients=", "=1", "clients=1:2:3:4",
		"duration=-1s", "pause=NaN", "clients=1e3", "duration=0x10", "clients=1,1", "pause=1e-300:1e-299:7"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		name, vals, err := sweep.ParseParam(s)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") && !strings.ContainsAny(s, "\n\r") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		if !strings.Contains(sweep.ParamNames(), name) || len(vals) == 0 {
			t.Fatalf("%q: name %q, %d values", s, name, len(vals))
		}
		if strings.Count(s, ":") == 2 && len(vals) > sweep.MaxParamSteps {
			t.Fatalf("%q: %d steps, more than %d", s, len(vals), sweep.MaxParamSteps)
		}
		list := make([]string, len(vals))
		for i, v := range vals {
			if math.IsNaN(v) || math.IsInf(v, 0) || slices.Contains(vals[:i], v) {
				t.Fatalf("%q: values %v", s, vals)
			}
			list[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		again := name + "=" + strings.Join(list, ",")
		name2, vals2, err := sweep.ParseParam(again)
		if err != nil || name2 != name || !slices.Equal(vals, vals2) {
			t.Fatalf("%q gave %s=%v; written back as %q it gives %s=%v (%v)", s, name, vals, again, name2, vals2, err)
		}
	})
}
