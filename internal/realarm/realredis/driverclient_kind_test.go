package realredis

import (
	"testing"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/internal/realarm/driver"
)

// TestResultKind: a driver's reply result becomes the event kind of the
// same outcome, by name and not by the spelling the two share.
func TestResultKind(t *testing.T) {
	for _, c := range []struct {
		result string
		want   event.Kind
	}{{driver.OK, event.KindOK}, {driver.Fail, event.KindFail}, {driver.Unknown, event.KindUnknown}} {
		if got := resultKind(c.result); got != c.want {
			t.Errorf("resultKind(%q) = %s, want %s", c.result, got, c.want)
		}
	}
}
