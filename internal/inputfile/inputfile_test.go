//go:build unix

package inputfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRead: a regular file within the limit is read whole; a longer one,
// a directory, a device, a FIFO (without blocking: nothing ever writes to
// it), a socket and a link to a device are refused, each saying what it is.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok")
	os.WriteFile(ok, []byte("12345"), 0o644)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink("/dev/zero", link); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(ok, 5); err != nil || string(data) != "12345" {
		t.Errorf("a 5-byte file, limit 5: %q %v", data, err)
	}
	var tl *TooLargeError
	if _, err := Read(ok, 4); !errors.As(err, &tl) || tl.Size != 5 || err.Error() != "5 bytes: larger than the 4-byte limit" {
		t.Errorf("a 5-byte file, limit 4: %v", err)
	}
	for _, c := range []struct{ path, want string }{
		{dir, "is a directory"},
		{"/dev/zero", "is a device"},
		{"/dev/null", "is a device"},
		{link, "is a device"},
		{fifo, "is a named pipe (FIFO)"},
	} {
		_, err := Read(c.path, 1<<20)
		if err == nil || err.Error() != c.want || !NotRegular(err) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing"), 10); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), dir) || NotRegular(err) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestReadBoundsTheRead: a regular file whose size says less than it
// holds (a /proc file says 0; a file can grow between the look and the
// read) is read no further than the limit and refused.
func TestReadBoundsTheRead(t *testing.T) {
	const p = "/proc/self/maps"
	if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		t.Skipf("no /proc/self/maps of size 0 here (%v)", err)
	}
	var tl *TooLargeError
	if _, err := Read(p, 10); !errors.As(err, &tl) || tl.Size != -1 || err.Error() != "more than 10 bytes: larger than the 10-byte limit" {
		t.Errorf("%s, limit 10: %v", p, err)
	}
}
