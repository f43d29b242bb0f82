package scenarios_test

import (
	"fmt"
	"time"

	"github.com/locksim/locksim/scenarios"
)

// A scenario file is parsed and validated before anything runs: its
// durations may be multiples of the lock's TTL, resolved when the world is
// built for a lock, and a mistake is an error naming the file, line,
// column and field.
func ExampleParse() {
	src := `id: my-pause
description: the holder stops after its validity check for 1.5 × its TTL
clients: {count: 3}
duration: 8ttl
faults:
  - {kind: client-pause, at: after-check, start: 1ttl, duration: 1.5ttl, targets: [c0]}
`
	f, err := scenarios.Parse("my-pause.yaml", []byte(src))
	if err != nil {
		fmt.Println(err)
		return
	}
	pause := f.Faults[0]
	fmt.Printf("%s: %d clients, %s a %s of %v at %s\n", f.ID, f.Clients.Count, pause.Targets[0], pause.Kind, pause.Duration, pause.At)
	d, err := pause.Duration.Resolve(3 * time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("for a 3s TTL the pause lasts", d)

	_, err = scenarios.Parse("typo.yaml", []byte("id: typo\ndescription: a misspelt field\nduraton: 8ttl\n"))
	fmt.Println(err)
	// Output:
	// my-pause: 3 clients, c0 a client-pause of 1.5ttl at after-check
	// for a 3s TTL the pause lasts 4.5s
	// typo.yaml:3:1: duraton: unknown field "duraton" (did you mean "duration"?)
}

// The built-in scenarios are found by id, each with its source and what
// each side of the Redlock debate expects of the locks it is meant for.
func ExampleResolve() {
	s, err := scenarios.Resolve("pause-after-check")
	if err != nil {
		fmt.Println(err)
		return
	}
	e := s.File.Expect["set-nx-cad"]
	fmt.Printf("%s (debate row %s)\n", s.ID, s.File.Debate)
	fmt.Printf("set-nx-cad: Kleppmann %s, antirez %s\n", e.Kleppmann, e.Antirez)
	e = s.File.Expect["fencing"]
	fmt.Printf("fencing: Kleppmann %s, antirez %s\n", e.Kleppmann, e.Antirez)
	// Output:
	// pause-after-check (debate row S1)
	// set-nx-cad: Kleppmann unsafe, antirez unsafe
	// fencing: Kleppmann safe, antirez safe
}
