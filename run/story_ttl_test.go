package run

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/sim"
)

// TestStoryTTLOfAKeySetWithoutOne: setnx-expire sets its key with SETNX
// and gives it an expiry with a second command, so the key has no TTL of
// its own when set; the story says so instead of printing the node's
// clock reading, negated, as a TTL (it printed "a TTL of -9.47s").
func TestStoryTTLOfAKeySetWithoutOne(t *testing.T) {
	j, err := Spec{Scenario: "clock-jump", Lock: "setnx-expire", Seed: 1}.Build()
	if err != nil {
		t.Fatal(err)
	}
	jd, err := j.Run(sim.TestBubble(t))
	if err != nil {
		t.Fatal(err)
	}
	story := Explain(jd)
	if !strings.Contains(story, "set without a TTL, given its expiry") {
		t.Errorf("the story does not say the key was set without a TTL:\n%s", story)
	}
	if strings.Contains(story, "TTL of -") {
		t.Errorf("a negative TTL in the story:\n%s", story)
	}
}
