package scenarios_test

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
)

// A lock parameter written as null (or ~) is no parameter, as before the
// parameter table (the YAML decoder leaves such a value unset); a whole
// number written as a fraction is still refused for a count.
func TestLockParamNullAndFraction(t *testing.T) {
	info, err := catalogue.Get("redlock")
	if err != nil {
		t.Fatal(err)
	}
	build := func(params string) error {
		src := "id: p\ndescription: d\nduration: 5s\nfaults: []\nparams:\n  redlock: " + params + "\n"
		f, err := scenarios.Parse("p.yaml", []byte(src))
		if err != nil {
			return err
		}
		_, err = f.Parts(info, 1, scenarios.Params{})
		return err
	}
	if err := build("{ttl: null, tries: ~}"); err != nil {
		t.Errorf("null parameters refused: %v", err)
	}
	if err := build("{tries: 3.0}"); err == nil || !strings.Contains(err.Error(), "want a whole number, got the fraction 3.0") {
		t.Errorf("tries: 3.0 gave %v, want the whole-number error", err)
	}
	if err := build("{tries: 3}"); err != nil {
		t.Errorf("tries: 3 refused: %v", err)
	}
}
