package sim

import (
	"testing"
	"testing/synctest"
	"time"
)

// BenchmarkBubbleHandoff measures, with nothing else in the way, what a
// simulated command's two events (its arrival at the node, its reply at
// the client: 2.14 scheduler events a command in `locksim bench`) cost
// in a synctest bubble under three ways of running them; one op is one
// command. "scheduler" is the engine's shape: a scheduler goroutine
// advances the bubble clock twice (a timer each) and wakes the client,
// which blocks again on its next command. "baton" is the hand-off a
// baton scheduler would remove: the client advances the clock itself.
// "baton-wait" is a baton that still asks synctest.Wait whether every
// other goroutine is blocked, as one must where libraries start
// goroutines of their own (redsync). The difference between the first
// and the last two bounds what a baton scheduler could save a command
// (docs/PERFORMANCE.md, "What keeps it down"); the two clock advances, which no
// engine in a bubble avoids, are most of what remains.
func BenchmarkBubbleHandoff(b *testing.B) {
	const cmds = 10000
	patterns := []struct {
		name string
		run  func()
	}{
		{"scheduler", func() {
			reply := make(chan struct{})
			req := make(chan struct{}, 1)
			done := make(chan struct{})
			go func() { // the client
				for i := 0; i < cmds; i++ {
					req <- struct{}{}
					<-reply
				}
				close(done)
			}()
			for i := 0; i < cmds; i++ {
				synctest.Wait()
				<-req
				time.Sleep(time.Microsecond) // the arrival's instant
				time.Sleep(time.Microsecond) // the reply's
				reply <- struct{}{}
			}
			<-done
		}},
		{"baton", func() {
			for i := 0; i < cmds; i++ {
				time.Sleep(time.Microsecond)
				time.Sleep(time.Microsecond)
			}
		}},
		{"baton-wait", func() {
			for i := 0; i < cmds; i++ {
				synctest.Wait()
				time.Sleep(time.Microsecond)
				time.Sleep(time.Microsecond)
			}
		}},
	}
	for _, p := range patterns {
		b.Run(p.name, func(b *testing.B) {
			bubble := BenchBubble(b)
			b.ResetTimer()
			for b.Loop() {
				bubble(p.run)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cmds), "ns/cmd")
		})
	}
}
