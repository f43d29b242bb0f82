package faults

import (
	"slices"
	"testing"
	"time"
)

func TestWithLeader(t *testing.T) {
	part := Fault{Kind: Partition, Start: time.Second, Duration: time.Second,
		From: []string{Leader}, To: []string{"zk0", "zk1", "zk2", "c0"}}
	got := part.WithLeader("zk1")
	if !slices.Equal(got.From, []string{"zk1"}) || !slices.Equal(got.To, []string{"zk0", "zk2", "c0"}) {
		t.Fatalf("partition from the leader zk1: from %v to %v, want [zk1] to [zk0 zk2 c0]", got.From, got.To)
	}
	if !slices.Equal(part.To, []string{"zk0", "zk1", "zk2", "c0"}) {
		t.Fatalf("WithLeader changed its receiver's To: %v", part.To)
	}
	crash := Fault{Kind: Crash, Duration: time.Second, Targets: []string{Leader, "zk2"}}
	if got := crash.WithLeader("zk2").Targets; !slices.Equal(got, []string{"zk2"}) {
		t.Fatalf("crash of the leader zk2 and zk2: targets %v, want [zk2] once", got)
	}
	if got := crash.WithLeader("").Targets; !slices.Equal(got, []string{"zk2"}) {
		t.Fatalf("crash of the leader when none leads: targets %v, want [zk2]", got)
	}
	plain := Fault{Kind: Crash, Duration: time.Second, Targets: []string{"zk0"}}
	if plain.NamesLeader() || !slices.Equal(plain.WithLeader("zk1").Targets, []string{"zk0"}) {
		t.Fatalf("a fault that names no leader changed: %v", plain.WithLeader("zk1"))
	}
}
