package faults

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// swarmPinned is what Swarm drew from PCG(1, 2) before Swarm and Gen
// shared one drawing code (printed by the code of commit 05058be): every
// default run's trace hash depends on Swarm's stream, so it must not move.
var swarmPinned = []string{
	`{"kind":"node-pause","start":603762519,"duration":2055253087,"targets":["store"]}`,
	`{"kind":"partition","start":3514569368,"duration":16477730280,"from":["n1","store","n2","c1","n0"],"to":["c0","c2"]}`,
	`{"kind":"partition","start":4601835449,"duration":4137045646,"from":["c1","c0"],"to":["c2","n0","n2","n1","store"]}`,
	`{"kind":"failover","start":8658764531,"duration":28636119416}`,
	`{"kind":"client-pause","start":12080312468,"duration":4775453500,"targets":["c2"]}`,
	`{"kind":"node-pause","start":13747570565,"duration":1432826311,"targets":["n1"]}`,
	`{"kind":"loss","start":15052019603,"duration":3693218725,"from":["n0"],"to":["c1","c0","c2","store","n2","n1"],"loss_prob":0.07986243985473908}`,
	`{"kind":"clock-jump","start":17061324906,"targets":["n0"],"jump":15098647315}`,
	`{"kind":"clock-drift","start":18986099120,"duration":22890298354,"targets":["n2"],"drift_ppm":90610}`,
	`{"kind":"node-pause","start":19024159963,"duration":3667557691,"targets":["store"]}`,
	`{"kind":"client-pause","start":19125931856,"duration":6410257999,"targets":["c0"]}`,
	`{"kind":"failover","start":19413422493,"duration":6199683854}`,
	`{"kind":"clock-drift","start":20904955170,"duration":3938913248,"targets":["c0"],"drift_ppm":-98665}`,
	`{"kind":"failover","start":22117033362,"duration":18162704383}`,
	`{"kind":"clock-jump","start":23176047050,"targets":["store"],"jump":17043287129}`,
	`{"kind":"client-pause","start":23930471058,"duration":13118663420,"targets":["c2"]}`,
	`{"kind":"clock-jump","start":24012702092,"targets":["n0"],"jump":14437344163}`,
	`{"kind":"loss","start":24099869087,"duration":3926276858,"from":["c1","c2","store","n2","n1","n0"],"to":["c0"],"loss_prob":0.19937505501425773}`,
	`{"kind":"clock-jump","start":24497028697,"targets":["c0"],"jump":-3500325663}`,
	`{"kind":"failover","start":24741506244,"duration":6976009390}`,
	`{"kind":"client-pause","start":25085401939,"duration":12126957563,"targets":["c1"]}`,
	`{"kind":"clock-jump","start":25338785194,"targets":["n2"],"jump":-14753630660}`,
	`{"kind":"delay","start":26231044488,"duration":8200391606,"from":["n0","n2","c2","n1","c1"],"to":["store","c0"],"delay":4099452169}`,
	`{"kind":"partition","start":26317065906,"duration":16368962188,"from":["c1","n2","c0","store"],"to":["n0","n1","c2"]}`,
	`{"kind":"loss","start":30095613942,"duration":5670543600,"from":["c1","c2","store","n1","c0","n2"],"to":["n0"],"loss_prob":0.4517368709861168}`,
	`{"kind":"failover","start":30325091581,"duration":5075921687}`,
	`{"kind":"client-pause","start":30325228901,"duration":14155272624,"targets":["c1"]}`,
	`{"kind":"loss","start":33836444947,"duration":7873943412,"from":["c2"],"to":["n0","n2","n1","c1","c0","store"],"loss_prob":0.37949913004620667}`,
	`{"kind":"failover","start":35006151478,"duration":9730927018}`,
	`{"kind":"crash","start":37389260440,"duration":19626946067,"targets":["store"]}`,
	`{"kind":"delay","start":37652544079,"duration":4503410804,"from":["n1","c2"],"to":["n0","store","c0","c1","n2"],"delay":4705579951}`,
	`{"kind":"delay","start":41061620148,"duration":9935478654,"from":["c2","n1","c0","n2"],"to":["store","n0","c1"],"delay":4871016129}`,
	`{"kind":"loss","start":41140590677,"duration":1177492791,"from":["store","n0"],"to":["c1","n2","c0","n1","c2"],"loss_prob":0.45247640726702915}`,
	`{"kind":"clock-jump","start":42506843962,"targets":["c2"],"jump":7667124164}`,
	`{"kind":"failover","start":42658927286,"duration":24732269725}`,
	`{"kind":"delay","start":42804912045,"duration":8356364197,"from":["c2","n0","c0","c1"],"to":["store","n1","n2"],"delay":4846076711}`,
	`{"kind":"loss","start":43766122459,"duration":1650094924,"from":["n1","c0"],"to":["n2","c1","n0","store","c2"],"loss_prob":0.41038107073731817}`,
	`{"kind":"client-pause","start":45388663138,"duration":511556376,"targets":["c2"]}`,
}

func TestSwarmStreamPinned(t *testing.T) {
	b := Bounds{Duration: time.Minute, Clients: []string{"c0", "c1", "c2"}, Nodes: []string{"n0", "n1", "n2", "store"},
		Replicated: true, MinFaults: 30, MaxFaults: 40}
	fs, err := Swarm(rand.New(rand.NewPCG(1, 2)), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != len(swarmPinned) {
		t.Fatalf("%d faults, want %d", len(fs), len(swarmPinned))
	}
	for i, f := range fs {
		j, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if string(j) != swarmPinned[i] {
			t.Errorf("fault %d:\n got %s\nwant %s", i, j, swarmPinned[i])
		}
	}
}

// sizesOf lists a fault's sizes with the range (the shared table's) each
// must lie in under b.
func sizesOf(f Fault, b Bounds) map[string][3]time.Duration {
	in := func(d time.Duration, r sizeRange) [3]time.Duration {
		lo, hi := r.bounds(b)
		return [3]time.Duration{d, lo, hi}
	}
	switch f.Kind {
	case ClientPause:
		return map[string][3]time.Duration{"pause": in(f.Duration, sizePause)}
	case NodePause:
		return map[string][3]time.Duration{"node pause": in(f.Duration, sizeNodePause)}
	case ClockDrift:
		return map[string][3]time.Duration{"drift for": in(f.Duration, sizeDriftFor)}
	case Partition:
		return map[string][3]time.Duration{"partition": in(f.Duration, sizePartition)}
	case Delay:
		return map[string][3]time.Duration{"delay for": in(f.Duration, sizeDelayFor), "delay": in(f.Delay, sizeDelay)}
	case Loss:
		return map[string][3]time.Duration{"loss for": in(f.Duration, sizeLossFor)}
	case Crash:
		return map[string][3]time.Duration{"down": in(f.Duration, sizeCrash)}
	case Failover:
		return map[string][3]time.Duration{"down": in(f.Duration, sizeFailover)}
	}
	return nil
}

// TestOneTable: Swarm and Gen draw every size within the same table's
// ranges, with and without a TTL, under Limits.
func TestOneTable(t *testing.T) {
	for _, b := range []Bounds{genBounds,
		func() Bounds { b := genBounds; b.TTL = 3 * time.Second; return b }(),
		func() Bounds {
			b := genBounds
			b.Limits = Limits{Pause: time.Second, Down: 2 * time.Second, Delay: 20 * time.Millisecond}
			return b
		}(),
	} {
		check := func(t interface{ Fatalf(string, ...any) }, fs []Fault) {
			for _, f := range fs {
				for name, v := range sizesOf(f, b) {
					if v[0] < v[1] || v[0] > v[2] {
						t.Fatalf("%v: %s %v outside [%v, %v]", f, name, v[0], v[1], v[2])
					}
				}
			}
		}
		for seed := range uint64(50) {
			fs, err := Swarm(rand.New(rand.NewPCG(seed, 0)), b)
			if err != nil {
				t.Fatal(err)
			}
			check(t, fs)
		}
		rapid.Check(t, func(rt *rapid.T) { check(rt, Gen(b).Draw(rt, "schedule")) })
	}
}
