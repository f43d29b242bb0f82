package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/locksim/locksim/run"
)

// Merge checks that dirs are the complete shards of one sweep and writes
// the unsharded result into out: results.jsonl in job order (equal, byte
// for byte, to what the sweep writes run unsharded), sweep.json, and
// Finish's CSV, summary (to summary) and charts (if draw). out may be new,
// empty, or this very sweep's folder. Errors about the inputs are
// *InputError.
func Merge(out string, dirs []string, summary io.Writer, draw bool) error {
	if len(dirs) == 0 {
		return &InputError{"", errors.New("no shard directories given")}
	}
	var spec *Spec
	seen := map[int]string{}
	var lines []Line
	absOut, _ := filepath.Abs(out)
	for _, dir := range dirs {
		if abs, _ := filepath.Abs(dir); abs == absOut {
			return &InputError{"out", fmt.Errorf("%q is also an input", out)}
		}
		data, err := os.ReadFile(filepath.Join(dir, SpecFile))
		if err != nil {
			return &InputError{"", fmt.Errorf("%s: not a sweep directory (%v)", dir, run.UnwrapPathError(err))}
		}
		var s Spec
		if err := json.Unmarshal(data, &s); err != nil || s.Format != 1 || s.Shards < 1 || s.Shard < 0 || s.Shard >= s.Shards || len(s.Locks) == 0 || s.Seeds < 1 {
			return &InputError{"", fmt.Errorf("%s: unreadable %s", dir, SpecFile)}
		}
		if spec == nil {
			spec = &s
		} else {
			a, b := *spec, s
			a.Shard, b.Shard = 0, 0
			if why := otherBuild(a, b, dirs[0], dir); why != "" {
				return &InputError{"", fmt.Errorf("%s: shards of two builds of locksim may differ (a built-in scenario or lock changed); rerun them with one build", why)}
			}
			if !bytes.Equal(a.encode(), b.encode()) {
				return &InputError{"", fmt.Errorf("%s is a different sweep (%s) from %s (%s)", dir, s.Describe(), dirs[0], spec.Describe())}
			}
		}
		if prev, dup := seen[s.Shard]; dup {
			return &InputError{"", fmt.Errorf("%s and %s are both shard %d/%d", prev, dir, s.Shard, s.Shards)}
		}
		seen[s.Shard] = dir
		mine := s.shardJobs()
		path := filepath.Join(dir, ResultsFile)
		ls, err := ReadLines(path)
		if errors.Is(err, os.ErrNotExist) {
			ls, err = nil, nil
		}
		if err != nil {
			return &InputError{"", err}
		}
		got := map[int]bool{}
		for i, l := range ls {
			if !s.Matches(l) || got[l.Job] {
				return &InputError{"", fmt.Errorf("%s line %d is not a result of shard %d/%d", path, i+1, s.Shard, s.Shards)}
			}
			got[l.Job] = true
		}
		if len(ls) != mine {
			return &InputError{"", fmt.Errorf("%s: shard %d/%d has %d of its %d jobs; rerun its sweep command to finish it", dir, s.Shard, s.Shards, len(ls), mine)}
		}
		lines = append(lines, ls...)
	}
	for i := 0; i < spec.Shards; i++ {
		if _, ok := seen[i]; !ok {
			return &InputError{"", fmt.Errorf("shard %d/%d is missing", i, spec.Shards)}
		}
	}
	slices.SortFunc(lines, func(a, b Line) int { return a.Job - b.Job })
	merged := *spec
	merged.Shard, merged.Shards = 0, 1
	specJSON := merged.encode()
	// A results folder belongs to one sweep: out may be new, empty, or
	// this very sweep's (a merge again, or the unsharded run's folder).
	if have, err := os.ReadFile(filepath.Join(out, SpecFile)); err == nil {
		if !bytes.Equal(have, specJSON) {
			return &InputError{"out", fmt.Errorf("%q holds a different sweep (%s); merge into another folder", out, merged.differs(have))}
		}
	} else if _, err := os.Stat(filepath.Join(out, ResultsFile)); err == nil {
		return &InputError{"out", fmt.Errorf("%q has a %s but no %s: not a locksim sweep folder", out, ResultsFile, SpecFile)}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return &InputError{"out", fmt.Errorf("cannot create %q: %v", out, run.UnwrapPathError(err))}
	}
	if err := run.WriteFileAtomic(filepath.Join(out, SpecFile), specJSON); err != nil {
		return err
	}
	data, err := EncodeLines(lines)
	if err != nil {
		return err
	}
	if err := run.WriteFileAtomic(filepath.Join(out, ResultsFile), data); err != nil {
		return err
	}
	return Finish(out, &merged, lines, summary, draw)
}
