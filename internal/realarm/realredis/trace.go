package realredis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/locksim/locksim/internal/outfile"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// A real run's trace file: a header line naming the run as the real arm
// ran it, then the history as JSON Lines. A real run is not replayable,
// so a history past the file's bound is cut rather than lost: the file
// keeps the header and the first events that fit, and its last line
// says the cut (TraceCutKey). Under the bound the file is exactly the
// header and every event.

// TraceCutKey names a cut trace's last line:
// {"locksim_trace_cut":{"kept_events":N,"not_kept":M,"max_bytes":B}}.
const TraceCutKey = "locksim_trace_cut"

// TraceCut is a trace cut at its bound: Kept events written, NotKept left
// out.
type TraceCut struct {
	Kept     int   `json:"kept_events"`
	NotKept  int   `json:"not_kept"`
	MaxBytes int64 `json:"max_bytes"`
}

func (c *TraceCut) String() string {
	return fmt.Sprintf("trace cut at %d events: %d not kept (the bound of %d MiB, --trace-max-mb; its last line says so)", c.Kept, c.NotKept, c.MaxBytes>>20)
}

// WriteHistory writes the run's history as JSON Lines to path
// (atomically), after a header line naming the run as the real arm ran it.
func (jd *Judged) WriteHistory(path string) error { return jd.WriteHistoryMax(path, 0) }

// WriteHistoryMax is WriteHistory with a bound on the file's bytes
// (--trace-max-mb; 0: none). It streams: each event is encoded and
// written in turn through a buffer into a temp file beside path, renamed
// over path when complete (an error leaves no file). Past the bound the
// file is cut (the header and the events that fit, then the cut's line,
// which the bound does not count), and jd.TraceCut says so. A driver's
// run writes its drivers' stderr beside it first (DriverStderrPath).
func (jd *Judged) WriteHistoryMax(path string, maxBytes int64) error {
	jd.TraceCut = nil
	if err := jd.WriteDriverStderr(DriverStderrPath(path)); err != nil {
		return fmt.Errorf("the drivers' stderr, beside the trace: %w", err)
	}
	hdr, err := json.Marshal(map[string]any{run.RealRunKey: map[string]any{"repro": jd.Real.Repro(), "ttl_ns": int64(jd.Real.TTL),
		"time_scale": jd.Real.Scale, "replayable": false, "faults": jd.Job.Config.Faults}})
	if err != nil {
		return err
	}
	f, err := outfile.Create(path, 0)
	if err != nil {
		return err
	}
	cut, err := writeHistory(f.Raw(), hdr, jd.Result.History, maxBytes)
	if err != nil {
		f.Discard()
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	jd.TraceCut = cut
	return nil
}

// writeHistory writes the header and the events' lines to w, at most
// maxBytes (0: no bound), then the cut's line if it cut.
func writeHistory(w io.Writer, hdr []byte, evs []sim.Event, maxBytes int64) (*TraceCut, error) {
	// w is a buffer: a write error stays in it, and Commit returns it.
	n := int64(len(hdr) + 1)
	w.Write(hdr)
	w.Write([]byte{'\n'})
	for i, ev := range evs {
		line, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		if maxBytes > 0 && n+int64(len(line))+1 > maxBytes {
			cut := &TraceCut{Kept: i, NotKept: len(evs) - i, MaxBytes: maxBytes}
			b, err := json.Marshal(map[string]*TraceCut{TraceCutKey: cut})
			if err != nil {
				return nil, err
			}
			w.Write(b)
			w.Write([]byte{'\n'})
			return cut, nil
		}
		n += int64(len(line)) + 1
		w.Write(line)
		w.Write([]byte{'\n'})
	}
	return nil, nil
}

// ReadTraceCut reads the cut a trace file's last line says (nil: the
// trace is whole, or the file cannot be read).
func ReadTraceCut(path string) *TraceCut {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	const tail = 512 // the cut's line is well under this
	off := max(0, st.Size()-tail)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil {
		return nil
	}
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	var m map[string]*TraceCut
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m[TraceCutKey]
}
