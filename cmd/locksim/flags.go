package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/run"
)

// Flag values that check their input as it is parsed, so a bad value is
// reported with the flag's name and its allowed range (pflag wraps the
// error in an InvalidValueError that errorLine unpacks). String returns ""
// while a flag is unset, so help shows no misleading default.

// seedValue is a uint64 seed in decimal.
type seedValue struct {
	v   uint64
	set bool
}

func (s *seedValue) Set(x string) error {
	v, err := strconv.ParseUint(x, 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) || isNegativeInteger(x) {
			return fmt.Errorf("%q is out of range (0..%d)", x, uint64(math.MaxUint64))
		}
		return fmt.Errorf("%q is not a number (0..%d)", x, uint64(math.MaxUint64))
	}
	s.v, s.set = v, true
	return nil
}

func (s *seedValue) String() string {
	if !s.set {
		return ""
	}
	return strconv.FormatUint(s.v, 10)
}

func (s *seedValue) Type() string { return "uint64" }

// intValue is an int in [min, max]; 0 while unset means "the scenario's default".
type intValue struct {
	v, min, max int
	set         bool
}

func (n *intValue) Set(x string) error {
	v, err := strconv.ParseInt(x, 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is not a number (%d..%d)", x, n.min, n.max)
	}
	if err != nil || v < int64(n.min) || v > int64(n.max) {
		return fmt.Errorf("%q is out of range (%d..%d)", x, n.min, n.max)
	}
	n.v, n.set = int(v), true
	return nil
}

func (n *intValue) String() string {
	if !n.set {
		return ""
	}
	return strconv.Itoa(n.v)
}

func (n *intValue) Type() string { return "int" }

// durationValue is a positive duration of at most max; 0 while unset.
type durationValue struct {
	v   time.Duration
	min time.Duration // 0: 1ns
	max time.Duration
	set bool
}

func (d *durationValue) Set(x string) error {
	lo := max(d.min, time.Nanosecond)
	v, err := time.ParseDuration(x)
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 90s, 2m; range %v..%v)", x, lo, d.max)
	}
	if v < lo || v > d.max {
		return fmt.Errorf("%q is out of range (%v..%v)", x, lo, d.max)
	}
	d.v, d.set = v, true
	return nil
}

func (d *durationValue) String() string {
	if !d.set {
		return ""
	}
	return d.v.String()
}

func (d *durationValue) Type() string { return "duration" }

func isNegativeInteger(x string) bool {
	if !strings.HasPrefix(x, "-") || len(x) < 2 {
		return false
	}
	for _, c := range x[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// onceString is a string flag that may be given once: a second value is an
// error, not a silent override.
type onceString struct {
	v   *string
	set bool
}

func (o *onceString) Set(x string) error {
	if o.set {
		return givenTwice(*o.v, x)
	}
	*o.v, o.set = x, true
	return nil
}

func (o *onceString) String() string {
	if o.v == nil {
		return ""
	}
	return *o.v
}

func (o *onceString) Type() string { return "string" }

func givenTwice(first, second string) error {
	return fmt.Errorf("given twice (%q, then %q): one value only", first, second)
}

// onceValue wraps a single-value flag so that a second value is an error
// (--seed 1 --seed 2 ran seed 2), as onceString does for strings.
type onceValue struct {
	pflag.Value
	set bool
}

func (o *onceValue) Set(x string) error {
	if o.set {
		return givenTwice(o.Value.String(), x)
	}
	if err := o.Value.Set(x); err != nil {
		return err
	}
	o.set = true
	return nil
}

// refuseRepeats makes every single-value flag of cmd and its subcommands
// refuse a second value. Switches (--json) and list flags are left alone:
// repeating a switch changes nothing, and a list flag means to repeat.
func refuseRepeats(cmd *cobra.Command) {
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := f.Value.(*onceString); ok || f.NoOptDefVal != "" {
			return
		}
		t := f.Value.Type()
		if t == "bool" || t == "count" || strings.HasSuffix(t, "Slice") || strings.HasSuffix(t, "Array") {
			return
		}
		f.Value = &onceValue{Value: f.Value}
	})
	for _, c := range cmd.Commands() {
		refuseRepeats(c)
	}
}

// notAFolder says when path exists and is not a folder (a folder flag
// given a file); a path that does not exist is fine.
func notAFolder(path string) error {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return fmt.Errorf("%q is not a folder", path)
	}
	return nil
}

// workerMemBytes is what one worker process needs at most, with margin
// (a worker holds one world and its history; measured ~40 MB).
const workerMemBytes = 64 << 20

// boundWorkers lowers a -j value to what the machine can run: at most four
// workers a core (more only queue for the cores) and no more than the
// available memory holds at workerMemBytes each. note says why, when
// lowered.
func boundWorkers(n int) (workers int, note string) {
	cores := runtime.NumCPU()
	limit := 4 * cores
	why := fmt.Sprintf("%d cores × 4", cores)
	if avail := availableMemory(); avail > 0 {
		if m := int(avail / workerMemBytes); m < limit {
			limit = max(1, m)
			why = fmt.Sprintf("%d MiB of available memory at %d MiB a worker", avail>>20, workerMemBytes>>20)
		}
	}
	if n <= limit {
		return n, ""
	}
	return limit, fmt.Sprintf("-j %d lowered to %d (%s)", n, limit, why)
}

// availableMemory is MemAvailable from /proc/meminfo, 0 when unknown.
func availableMemory() uint64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// floatValue is a float flag with a range; set records that it was given.
type floatValue struct {
	v        float64
	min, max float64
	set      bool
}

func (f *floatValue) Set(x string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("%q is not a number", x)
	}
	if v < f.min || v > f.max {
		return fmt.Errorf("%s out of range %s..%s", x, run.FormatValue(f.min), run.FormatValue(f.max))
	}
	f.v, f.set = v, true
	return nil
}

func (f *floatValue) String() string {
	if !f.set {
		return ""
	}
	return run.FormatValue(f.v)
}

func (f *floatValue) Type() string { return "float" }
