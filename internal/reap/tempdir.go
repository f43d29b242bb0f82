package reap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, inside each temp dir, is flocked by its owner while the dir
// is in use: the kernel drops the lock when the owner dies, however.
const ownerFile = ".locksim-owner"

// TempDir makes a temp dir in parent ("": os.TempDir()) named
// prefix-<pid>-<random>, and holds a lock on a file in it until release
// is called (call it before removing the dir, or after: both are fine).
// SweepTemp removes such a dir once its owner is dead.
func TempDir(parent, prefix string) (dir string, release func(), err error) {
	dir, err = os.MkdirTemp(parent, prefix+"-"+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return "", nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("%s: lock: %w", dir, err)
	}
	return dir, func() { f.Close() }, nil
}

// SweepTemp removes from parent ("": os.TempDir()) the dirs TempDir made
// with prefix whose owner is dead: named prefix-<pid>-<digits>, a real
// directory (not a link) of this user, <pid> not a live process, and
// its owner file absent or not locked (a live owner in another PID
// namespace sharing the folder still holds the lock). Nothing else is
// touched. It returns the dirs it removed, and the first error (a dir
// it could not remove).
func SweepTemp(parent, prefix string) ([]string, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return nil, err
	}
	var removed []string
	var first error
	for _, e := range ents {
		pid, ok := ownerPid(e.Name(), prefix)
		if !ok || !e.IsDir() || e.Type()&os.ModeSymlink != 0 || alive(pid) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		if locked(filepath.Join(dir, ownerFile)) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			if first == nil {
				first = fmt.Errorf("removing %s, left by a run that ended without cleaning up: %w", dir, err)
			}
			continue
		}
		removed = append(removed, dir)
	}
	return removed, first
}

// ownerPid reads <pid> from name if name is prefix-<pid>-<digits>.
func ownerPid(name, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix+"-")
	if !ok {
		return 0, false
	}
	p, r, ok := strings.Cut(rest, "-")
	if !ok || !digits(p) || !digits(r) {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

func digits(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// alive reports whether pid is a live process (or one we cannot tell of:
// kept, to be safe).
func alive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || !errors.Is(err, syscall.ESRCH)
}

// locked reports whether another process holds path's lock (false when
// the file is absent).
func locked(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
