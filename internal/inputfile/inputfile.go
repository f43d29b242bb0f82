// Package inputfile reads the files a user names on the command line (a
// scenario file, a --faults file, a trace to replay) with bounds: only a
// regular file is opened (a device such as /dev/zero would be read forever,
// and opening a FIFO blocks until something writes to it), and no more
// than a limit is read from it, whatever its size said when it was looked
// at.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// TooLargeError is a file over a read's limit.
type TooLargeError struct {
	Size  int64 // the file's size, or -1: it grew past Limit while read
	Limit int64
}

func (e *TooLargeError) Error() string {
	if e.Size < 0 {
		return fmt.Sprintf("more than %d bytes: larger than the %d-byte limit", e.Limit, e.Limit)
	}
	return fmt.Sprintf("%d bytes: larger than the %d-byte limit", e.Size, e.Limit)
}

// kindError is a path that names no regular file.
type kindError struct{ what string }

func (e *kindError) Error() string { return e.what }

// NotRegular reports whether err says the path is a directory, a device,
// a FIFO or a socket (not a regular file).
func NotRegular(err error) bool {
	var ke *kindError
	return errors.As(err, &ke)
}

// checkMode refuses everything but a regular file, saying what it is.
func checkMode(m fs.FileMode) error {
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return &kindError{"is a directory"}
	case m&fs.ModeNamedPipe != 0:
		return &kindError{"is a named pipe (FIFO)"}
	case m&fs.ModeSocket != 0:
		return &kindError{"is a socket"}
	case m&fs.ModeDevice != 0:
		return &kindError{"is a device"}
	}
	return &kindError{"is a special file"}
}

// Open opens the regular file at path (a symbolic link is followed) for
// reading. Anything else is refused without being opened in a way that
// could block; the check is made again on the opened file, so a file
// swapped for a FIFO in between is refused too. Errors do not repeat the
// path (callers name it): "is a directory", "no such file or directory".
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if err := checkMode(st.Mode()); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, unwrapPath(err)
	}
	st, err = f.Stat()
	if err == nil {
		err = checkMode(st.Mode())
	}
	if err != nil {
		f.Close()
		return nil, unwrapPath(err)
	}
	return f, nil
}

// Read reads the regular file at path (see Open), refusing one of more
// than limit bytes: by its size first, and by reading at most limit+1
// bytes, so a file that grows while read is refused as well.
func Read(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > limit {
		return nil, &TooLargeError{Size: st.Size(), Limit: limit}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(data)) > limit {
		return nil, &TooLargeError{Size: -1, Limit: limit}
	}
	return data, nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
