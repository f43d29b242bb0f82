package reports

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/locksim/locksim/run"
)

// Owns are the entries of an output folder a report writes; a rerun
// replaces exactly these (anything else in the folder stays).
var Owns = []string{"index.html", "report.md", "results.json", "img", "timelines"}

// Output is where a report is written: a staging folder beside the
// destination, moved into place by Commit when the report is complete and
// removed by Discard otherwise, so an interrupted or failed report leaves
// nothing and a rerun leaves no stale chart or timeline of the previous
// one.
type Output struct {
	dir       string // the staging folder
	final     string
	committed bool
}

// Stage makes the staging folder for a report to final (checked: final
// must be a folder or not exist; its parent is created).
func Stage(final string) (*Output, error) {
	if st, err := os.Lstat(final); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%q exists and is not a directory", final)
	}
	parent := filepath.Dir(filepath.Clean(final))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %q: %v", parent, run.UnwrapPathError(err))
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(filepath.Clean(final))+".tmp-")
	if err == nil {
		err = os.Chmod(staging, 0o755)
	}
	for _, sub := range []string{"img", "timelines"} {
		if err == nil {
			err = os.Mkdir(filepath.Join(staging, sub), 0o755)
		}
	}
	if err != nil {
		if staging != "" {
			os.RemoveAll(staging)
		}
		return nil, fmt.Errorf("cannot write beside %q: %v", final, run.UnwrapPathError(err))
	}
	return &Output{dir: staging, final: final}, nil
}

// Dir is the staging folder: write the report here.
func (o *Output) Dir() string { return o.dir }

// Final is the destination folder.
func (o *Output) Final() string { return o.final }

// Commit moves the complete report from the staging folder into place.
func (o *Output) Commit() error {
	if _, err := os.Lstat(o.final); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(o.dir, o.final); err != nil {
			return err
		}
		o.committed = true
		return nil
	}
	for _, name := range Owns {
		if err := os.RemoveAll(filepath.Join(o.final, name)); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(o.dir, name), filepath.Join(o.final, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	o.committed = true
	return os.RemoveAll(o.dir)
}

// Discard removes the staging folder of a report that was not committed.
func (o *Output) Discard() {
	if !o.committed && o.dir != "" && o.dir != o.final {
		os.RemoveAll(o.dir)
	}
}
