// Package outfile writes locksim's output files safely. Before a run it
// checks that a file or folder can be written (so a bad path is an input
// error, not a run's work lost at the end); a file is written to a temp
// file beside its path and renamed over it only when complete, so no
// half-written file is ever left behind.
package outfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// UnwrapPathError returns the cause inside an *os.PathError (the path is
// said by the caller's message already).
func UnwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// CheckWritable reports whether a file can be created at path: path is a
// regular file we may replace or a new name, in an existing directory we
// can write in (a file is written beside path and renamed over it, so
// the directory must take a new file: its mode bits are checked, which
// hold even for root, and a file is created there and removed, for what
// they do not say: a read-only mount, a missing permission).
func CheckWritable(path string) error {
	if st, err := os.Lstat(path); err == nil {
		switch m := st.Mode(); {
		case m.IsDir():
			return fmt.Errorf("%q is a directory", path)
		case m&os.ModeSymlink != 0:
			return fmt.Errorf("%q is a symbolic link: locksim replaces the files it writes, so it writes only to a regular file or a new path", path)
		case m&os.ModeNamedPipe != 0:
			return fmt.Errorf("%q is a FIFO: locksim writes only to a regular file or a new path", path)
		case m&(os.ModeDevice|os.ModeCharDevice) != 0:
			return fmt.Errorf("%q is a device: locksim writes only to a regular file or a new path", path)
		case !m.IsRegular():
			return fmt.Errorf("%q is not a regular file (%v)", path, m.Type())
		case m.Perm()&0o200 == 0:
			return fmt.Errorf("%q is read-only", path)
		}
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot write %q: %v", path, UnwrapPathError(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("cannot write %q: %s is not a directory", path, dir)
	}
	if st.Mode().Perm()&0o200 == 0 {
		return fmt.Errorf("cannot write %q: %s is read-only", path, dir)
	}
	if err := probeDir(dir); err != nil {
		return fmt.Errorf("cannot write %q: %v", path, err)
	}
	return nil
}

// CheckDir checks a folder locksim will write named files into, before
// the run: it is a directory we can write in, or a new path whose nearest
// existing ancestor is one; the files it will write are writable.
func CheckDir(dir string, files ...string) error {
	st, err := os.Lstat(dir)
	if err == nil && st.Mode()&os.ModeSymlink != 0 {
		// A link to a directory is a directory to write into.
		target, terr := os.Stat(dir)
		if terr != nil {
			return fmt.Errorf("%q is a symbolic link to nothing (%v)", dir, UnwrapPathError(terr))
		}
		if !target.IsDir() {
			return fmt.Errorf("%q is a symbolic link to a file, not a directory", dir)
		}
		st = target
	}
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%q exists and is not a directory", dir)
	case err == nil:
		if st.Mode().Perm()&0o200 == 0 {
			return fmt.Errorf("%q is read-only", dir)
		}
		if err := probeDir(dir); err != nil {
			return fmt.Errorf("cannot write in %q: %v", dir, err)
		}
		for _, f := range files {
			if err := CheckWritable(filepath.Join(dir, f)); err != nil {
				return err
			}
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("cannot write in %q: %v", dir, UnwrapPathError(err))
	}
	// A new folder: created by the first write, in its nearest existing
	// ancestor.
	for a := filepath.Dir(filepath.Clean(dir)); ; a = filepath.Dir(a) {
		st, err := os.Stat(a)
		if errors.Is(err, os.ErrNotExist) && a != filepath.Dir(a) {
			continue
		}
		switch {
		case err != nil:
			return fmt.Errorf("cannot create %q: %v", dir, UnwrapPathError(err))
		case !st.IsDir():
			return fmt.Errorf("cannot create %q: %s is not a directory", dir, a)
		case st.Mode().Perm()&0o200 == 0:
			return fmt.Errorf("cannot create %q: %s is read-only", dir, a)
		}
		if err := probeDir(a); err != nil {
			return fmt.Errorf("cannot create %q: %v", dir, err)
		}
		return nil
	}
}

// probeDir checks that a file can be created in dir by creating one and
// removing it (what the mode bits do not say: a read-only mount, a
// pseudo file system, a missing permission).
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".locksim-probe-*")
	if err != nil {
		return UnwrapPathError(err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Sink is the writer beneath a File's buffer: the temp file itself (a test
// puts a full disk there).
var Sink = func(f *os.File) io.Writer { return f }

// File is an output file being written: bytes go through a 1 MiB buffer
// into a temp file beside Path. Body bounds what passes through it to Max
// bytes (0: no bound) and counts its lines; Raw writes around the bound
// (a header, a footer). Commit makes the file; Discard removes the temp.
type File struct {
	Path string
	tmp  *os.File
	buf  *bufio.Writer
	body Capped
}

// Create checks path and creates the temp file beside it.
func Create(path string, max int64) (*File, error) {
	if err := CheckWritable(path); err != nil {
		return nil, err
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write %q: %v", path, UnwrapPathError(err))
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, fmt.Errorf("cannot write %q: %v", path, UnwrapPathError(err))
	}
	f := &File{Path: path, tmp: tmp}
	f.buf = bufio.NewWriterSize(Sink(tmp), 1<<20)
	f.body = Capped{W: f.buf, Max: max}
	return f, nil
}

// TempName is the temp file's name ("" once committed or discarded).
func (f *File) TempName() string {
	if f == nil || f.tmp == nil {
		return ""
	}
	return f.tmp.Name()
}

// Raw is the writer without the bound.
func (f *File) Raw() io.Writer { return f.buf }

// Body is the bounded writer.
func (f *File) Body() *Capped { return &f.body }

// Commit flushes, syncs and closes the temp file and renames it over
// Path; on any error it removes the temp file.
func (f *File) Commit() error {
	tmp := f.tmp
	f.tmp = nil
	err := f.buf.Flush()
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), f.Path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %q: %v", f.Path, UnwrapPathError(err))
	}
	return nil
}

// Discard closes and removes the temp file (nothing once committed).
func (f *File) Discard() {
	if f == nil || f.tmp == nil {
		return
	}
	f.tmp.Close()
	os.Remove(f.tmp.Name())
	f.tmp = nil
}

// Capped passes at most Max bytes (0: no bound) to W; past the bound it
// drops the rest and records that it did (Over).
type Capped struct {
	W     io.Writer
	Max   int64
	N     int64
	Lines int64
	Over  bool
}

func (c *Capped) Write(p []byte) (int, error) {
	if c.Over {
		return len(p), nil
	}
	if c.Max > 0 && c.N+int64(len(p)) > c.Max {
		c.Over = true
		return len(p), nil
	}
	c.N += int64(len(p))
	c.Lines += int64(bytes.Count(p, []byte{'\n'}))
	return c.W.Write(p)
}
