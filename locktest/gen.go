package locktest

import (
	"time"

	"pgregory.net/rapid"

	"github.com/locksim/locksim/faults"
)

// Schedules is a rapid generator of fault schedules for a world shaped by
// o: up to MaxFaults faults of the allowed kinds. rapid shrinks a failing
// schedule toward fewer faults, earlier starts, shorter durations and
// smaller magnitudes.
func Schedules(o Options) *rapid.Generator[[]faults.Fault] {
	o = o.withDefaults()
	clients, nodes, replicated := names(o)
	kinds := o.Kinds
	if kinds == nil {
		for _, k := range faults.Kinds {
			if k != faults.Failover || replicated {
				kinds = append(kinds, k)
			}
		}
	}
	all := append(append([]string(nil), clients...), nodes...)
	span := int64(o.Duration) * 8 / 10
	ttl := int64(o.TTL)
	one := rapid.Custom(func(t *rapid.T) faults.Fault {
		dur := func(label string, hi int64) time.Duration {
			return time.Duration(rapid.Int64Range(int64(time.Millisecond), hi).Draw(t, label))
		}
		{
			f := faults.Fault{Kind: rapid.SampledFrom(kinds).Draw(t, "kind"),
				Start: time.Duration(rapid.Int64Range(0, span).Draw(t, "start"))}
			switch f.Kind {
			case faults.ClientPause:
				f.Targets = []string{rapid.SampledFrom(clients).Draw(t, "client")}
				f.Duration = dur("pause", 3*ttl)
				f.At = rapid.SampledFrom(append([]string{""}, faults.PausePoints...)).Draw(t, "at")
			case faults.NodePause:
				f.Targets = []string{rapid.SampledFrom(nodes).Draw(t, "node")}
				f.Duration = dur("pause", 2*ttl)
			case faults.ClockDrift:
				f.Targets = []string{rapid.SampledFrom(all).Draw(t, "proc")}
				f.Duration = dur("drift-for", 10*ttl)
				f.DriftPPM = rapid.Int64Range(-200_000, 200_000).Draw(t, "ppm")
			case faults.ClockJump:
				f.Targets = []string{rapid.SampledFrom(all).Draw(t, "proc")}
				f.Jump = time.Duration(rapid.Int64Range(-3*ttl, 3*ttl).Draw(t, "jump"))
			case faults.Partition, faults.Delay, faults.Loss:
				side := rapid.SliceOfNDistinct(rapid.SampledFrom(all), 1, len(all)-1, rapid.ID[string]).Draw(t, "side")
				in := map[string]bool{}
				for _, s := range side {
					in[s] = true
				}
				f.From = side
				for _, s := range all {
					if !in[s] {
						f.To = append(f.To, s)
					}
				}
				f.OneWay = rapid.Bool().Draw(t, "one-way")
				f.Duration = dur("for", 4*ttl)
				switch f.Kind {
				case faults.Delay:
					f.Delay = dur("delay", 2*ttl)
				case faults.Loss:
					f.LossProb = rapid.Float64Range(0.05, 0.9).Draw(t, "loss")
				}
			case faults.Crash:
				f.Targets = []string{rapid.SampledFrom(nodes).Draw(t, "node")}
				f.Duration = dur("down", 3*ttl)
			case faults.Failover:
				f.Duration = dur("down", 10*ttl)
			}
			return f
		}
	})
	// rapid shrinks a slice by deleting any of its elements, then each
	// element toward its minimum.
	return rapid.Custom(func(t *rapid.T) []faults.Fault {
		drawn := rapid.SliceOfN(one, 0, o.MaxFaults).Draw(t, "faults")
		out := make([]faults.Fault, 0, len(drawn))
		for _, f := range drawn {
			if (f.Kind == faults.ClockDrift && f.DriftPPM == 0) || (f.Kind == faults.ClockJump && f.Jump == 0) {
				continue // a no-op: rapid shrinks magnitudes to 0; leave them out
			}
			out = append(out, f)
		}
		faults.Sort(out)
		return out
	})
}
