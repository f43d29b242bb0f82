package locks

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// stub is a design whose lock records the values it was built with.
type stub struct {
	ttl, delay time.Duration
	tries      int
}

func (stub) Acquire(context.Context) (Lease, error) { return Lease{}, nil }
func (stub) Release(context.Context, Lease) error   { return nil }

func stubInfo() Info {
	i := Info{ID: "stub", Params: []Param{
		{Name: "ttl", Kind: KindDuration, Default: Dur(3 * time.Second), Positive: true, Max: Dur(time.Hour)},
		{Name: "tries", Kind: KindInt, Unit: "attempts", Default: Int(3), Min: Int(1), Max: Int(10)},
		{Name: "retry_delay", Kind: KindDuration, Default: Dur(time.Second), Max: Dur(time.Hour)},
		{Name: "mode", Kind: KindChoice, Unit: "stub mode", Default: Choice("a"), Choices: []string{"a", "b"}},
	}}
	i.Configure = func(v Values) (Configured, error) {
		s := stub{ttl: v.Duration("ttl"), delay: v.Duration("retry_delay"), tries: v.Int("tries")}
		if v.Choice("mode") == "b" && !v.Given("tries") {
			return Configured{}, &ParamError{"tries", "mode b needs tries"}
		}
		return Configured{TTL: s.ttl, New: func(Env) (Lock, error) { return s, nil }}, nil
	}
	d, err := i.Defaults()
	if err != nil {
		panic(err)
	}
	return d
}

func built(t *testing.T, i Info) stub {
	t.Helper()
	l, err := i.New(Env{})
	if err != nil {
		t.Fatal(err)
	}
	return l.(stub)
}

func TestWith(t *testing.T) {
	base := stubInfo()
	if s := built(t, base); base.TTL != 3*time.Second || s.tries != 3 || s.delay != time.Second {
		t.Fatalf("defaults: TTL %v, %+v", base.TTL, s)
	}
	i, err := base.With(map[string]Value{"ttl": Dur(5 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	j, err := i.With(map[string]Value{"tries": Int(7)}) // on top of the ttl given before
	if err != nil {
		t.Fatal(err)
	}
	if s := built(t, j); j.TTL != 5*time.Second || s.ttl != 5*time.Second || s.tries != 7 {
		t.Fatalf("with ttl then tries: TTL %v, %+v", j.TTL, s)
	}
	if base.TTL != 3*time.Second || built(t, base).tries != 3 {
		t.Fatalf("With changed its receiver")
	}
	for _, c := range []struct {
		given map[string]Value
		param string
		msg   string
	}{
		{map[string]Value{"drift": Float(1)}, "drift", "lock stub does not take drift (it takes: ttl, tries, retry_delay, mode)"},
		{map[string]Value{"ttl": Dur(0)}, "ttl", "0s: must be positive and at most 1h0m0s"},
		{map[string]Value{"retry_delay": Dur(-1)}, "retry_delay", "-1ns: must be non-negative and at most 1h0m0s"},
		{map[string]Value{"tries": Int(11)}, "tries", "11 out of range 1..10"},
		{map[string]Value{"mode": Choice("c")}, "mode", `"c" is not a stub mode (one of a, b)`},
		{map[string]Value{"mode": Choice("b")}, "tries", "mode b needs tries"},
	} {
		_, err := base.With(c.given)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != c.param || pe.Msg != c.msg {
			t.Errorf("With(%v) = %v, want %s: %s", c.given, err, c.param, c.msg)
		}
	}
	none := Info{ID: "plain", TTL: time.Second}
	if _, err := none.With(map[string]Value{"ttl": Dur(time.Second)}); err == nil || !strings.Contains(err.Error(), "lock plain takes no parameters") {
		t.Errorf("a design without a table: %v", err)
	}
}

func TestScaled(t *testing.T) {
	i, err := stubInfo().With(map[string]Value{"ttl": Dur(10 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := i.Scaled(0.1)
	if err != nil {
		t.Fatal(err)
	}
	// Every duration (given or default) scales; counts do not.
	if l := built(t, s); s.TTL != time.Second || l.ttl != time.Second || l.delay != 100*time.Millisecond || l.tries != 3 {
		t.Fatalf("scaled: TTL %v, %+v", s.TTL, l)
	}
	// A value given after scaling is scaled too: the world stays k times faster.
	w, err := s.With(map[string]Value{"retry_delay": Dur(2 * time.Second)})
	if err != nil || built(t, w).delay != 200*time.Millisecond {
		t.Fatalf("given after scaling: %v %+v", err, built(t, w))
	}
	if _, err := (Info{ID: "lib", TTL: time.Second}).Scaled(0.5); err == nil || !strings.Contains(err.Error(), "cannot be time-scaled") {
		t.Errorf("a leased design without a table: %v, want a refusal", err)
	}
	if _, err := (Info{ID: "none"}).Scaled(0.5); err != nil {
		t.Errorf("a design with no lease and no table has nothing to scale: %v", err)
	}
}
