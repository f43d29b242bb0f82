package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Streams splits one seed into named, independent random streams: drawing
// more from "network" never shifts what "faults" or a client sees.
type Streams struct{ seed uint64 }

// NewStreams returns the streams of seed.
func NewStreams(seed uint64) Streams { return Streams{seed: seed} }

// Seed is the root seed.
func (s Streams) Seed() uint64 { return s.seed }

// Get returns a fresh generator for the stream called name. Two calls with
// the same name return generators that produce the same sequence.
func (s Streams) Get(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(s.seed, h.Sum64()))
}
