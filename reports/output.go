package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/locksim/locksim/run"
)

// Owns are the entries of an output folder a report writes; a rerun
// replaces exactly these (anything else in the folder stays), results.json
// last.
var Owns = []string{"index.html", "report.md", "img", "timelines", "lock", "scenario", "results.json"}

// Output is where a report is written: a staging folder beside the
// destination, moved into place by Commit when the report is complete and
// removed by Discard otherwise, so an interrupted or failed report leaves
// nothing and a rerun leaves no stale chart or timeline of the previous
// one. A killed report's staging folder is removed by the next Stage for
// the same destination (its owner file's lock is gone with its process).
type Output struct {
	dir       string // the staging folder
	final     string
	committed bool
	owner     *os.File // ownerFile in dir, locked while the report runs
}

// ownerFile is a staging folder's lock: its report holds an exclusive
// flock on it while it runs; the kernel drops the lock when the process
// ends, however it ends (SIGKILL too), so a staging folder whose owner
// file is not locked is a dead report's leftover (removeLeftovers).
const ownerFile = ".locksim-owner"

// stagingPrefix starts the name of a staging folder for final.
func stagingPrefix(final string) string { return "." + filepath.Base(filepath.Clean(final)) + ".tmp-" }

// own makes dir's owner file, locked, and returns it. The file is locked
// under a temporary name and then renamed, so no other report ever finds
// it unlocked.
func own(dir string) (*os.File, error) {
	tmp := filepath.Join(dir, ownerFile+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	fmt.Fprintf(f, "locksim report staging folder, pid %d\n", os.Getpid())
	if err := os.Rename(tmp, filepath.Join(dir, ownerFile)); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// removeLeftovers removes the staging folders for final (in parent) that
// reports killed before their end left: those whose owner file is there
// and no process holds its lock. Anything else is left alone: a live
// report's, a folder without an owner file (not one of ours, or an older
// locksim's), a file or link of that name.
func removeLeftovers(parent, final string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	prefix := stagingPrefix(final)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir) // held locked: no other report removes it too
		}
		f.Close()
	}
}

// ErrNotReport is Stage's error for an output folder that is not empty
// and holds no locksim report: writing there would replace files of the
// user's (Owns) that no report wrote.
var ErrNotReport = errors.New("holds no locksim report")

// maxResultsJSON bounds the results.json IsReport reads (a 200-seed
// report's is well under 1 MiB).
const maxResultsJSON = 64 << 20

// IsReport reports whether dir holds a locksim report: its results.json
// is the report's model (an object with a "cells" array and a "settings"
// object naming the locksim that wrote it), which Commit moves into place
// with the rest of the report.
func IsReport(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "results.json"))
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() || st.Size() > maxResultsJSON {
		return false
	}
	var doc struct {
		Cells    *[]json.RawMessage `json:"cells"`
		Settings *struct {
			Locksim *string `json:"locksim"`
		} `json:"settings"`
	}
	if err := json.NewDecoder(io.LimitReader(f, maxResultsJSON)).Decode(&doc); err != nil {
		return false
	}
	return doc.Cells != nil && doc.Settings != nil && doc.Settings.Locksim != nil
}

// Stage makes the staging folder for a report to final (checked: final
// must be a folder or not exist; its parent is created). A final folder
// that exists must be empty or hold an earlier report (IsReport), unless
// force: otherwise the error wraps ErrNotReport and nothing is written.
func Stage(final string, force bool) (*Output, error) {
	if st, err := os.Lstat(final); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("%q exists and is not a directory", final)
	} else if err == nil && !force {
		ents, err := os.ReadDir(final)
		if err != nil {
			return nil, fmt.Errorf("cannot read %q: %v", final, run.UnwrapPathError(err))
		}
		if len(ents) > 0 && !IsReport(final) {
			return nil, fmt.Errorf("%q is not empty and %w (no results.json of one)", final, ErrNotReport)
		}
	}
	parent := filepath.Dir(filepath.Clean(final))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create %q: %v", parent, run.UnwrapPathError(err))
	}
	removeLeftovers(parent, final)
	staging, err := os.MkdirTemp(parent, stagingPrefix(final))
	var owner *os.File
	if err == nil {
		owner, err = own(staging)
	}
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
		if owner != nil {
			owner.Close()
		}
		return nil, fmt.Errorf("cannot write beside %q: %v", final, run.UnwrapPathError(err))
	}
	return &Output{dir: staging, final: final, owner: owner}, nil
}

// Dir is the staging folder: write the report here.
func (o *Output) Dir() string { return o.dir }

// Final is the destination folder.
func (o *Output) Final() string { return o.final }

// Commit moves the complete report from the staging folder into place.
func (o *Output) Commit() error {
	// The owner file is not the report's; without it the folder is left
	// alone by others until it is moved or removed.
	if err := os.Remove(filepath.Join(o.dir, ownerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	o.release()
	if _, err := os.Lstat(o.final); errors.Is(err, os.ErrNotExist) {
		if err := os.Rename(o.dir, o.final); err != nil {
			return err
		}
		o.committed = true
		return nil
	}
	for _, name := range Owns {
		src, dst := filepath.Join(o.dir, name), filepath.Join(o.final, name)
		// A file is renamed over the old one (atomically: results.json,
		// last, keeps a commit cut short recognisably a report); a folder
		// replaces the old one.
		if !isFile(src) || isDir(dst) {
			if err := os.RemoveAll(dst); err != nil {
				return err
			}
		}
		if err := os.Rename(src, dst); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	o.committed = true
	return os.RemoveAll(o.dir)
}

func isFile(path string) bool { st, err := os.Lstat(path); return err == nil && st.Mode().IsRegular() }
func isDir(path string) bool  { st, err := os.Lstat(path); return err == nil && st.IsDir() }

// Discard removes the staging folder of a report that was not committed.
func (o *Output) Discard() {
	if !o.committed && o.dir != "" && o.dir != o.final {
		os.RemoveAll(o.dir)
	}
	o.release()
}

// release drops the staging folder's lock.
func (o *Output) release() {
	if o.owner != nil {
		o.owner.Close()
		o.owner = nil
	}
}
