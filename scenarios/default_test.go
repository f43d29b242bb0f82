package scenarios

import (
	"testing"

	"github.com/locksim/locksim/sim"
)

func TestDefaultRuns(t *testing.T) {
	for _, id := range []string{"set-nx-cad", "redlock", "redsync", "redislock"} {
		cfg, err := Build("default", id, 1, Params{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.Run(sim.TestBubble(t), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %+v %s", id, res.Stats, res.TraceSHA256)
	}
}
