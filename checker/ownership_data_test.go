package checker

// Data-driven tests of the ownership rule with key truth (hold.go), in the
// style of etcd raft's and CockroachDB's testdata: each file under
// testdata/ownership/ holds cases, each a command, a history in, and the
// expected output after a "----" line, up to a blank line:
//
//	# a comment (anywhere outside the expected output)
//	ownership
//	0   c0 call acquire id=1
//	10  c0 ok acquire id=1 until=100 lease=v0
//	200 n0 key-touch del by=c0 owner=c1 held=v0;v1
//	----
//	ok
//
// An event line is: true time (ns), process, kind, then the operation
// (acquire, release) or, for a key-touch, what it did (del, expire), then
// fields: id= (OpID), until= (the lease's end, true time), lease= (an
// acquire ok's lease value, comma-separated for a multi-key lease), mode=
// (an acquire ok's mode: read), by= (a key-touch's client: Peer), owner=
// (the key's last writer: Detail), held= (the values the key held,
// ';'-separated; a hash's fields comma-separated in one value).
//
// Commands:
//
//	ownership [clients=c0,c1]  Ownership's verdict with KeyTruth on: "ok",
//	                           or the first violation's line and, when
//	                           there are more, "N violations".
//	holds                      each client's hold after the history.
//
// The clients are the processes with operations in order of appearance,
// unless clients= names them (their order breaks ties). Run with -rewrite
// to write the outputs the code gives into the files.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/locksim/locksim/event"
)

var rewrite = flag.Bool("rewrite", false, "write the outputs the code gives into testdata/ownership/*.txt")

func TestOwnershipData(t *testing.T) {
	files, _ := filepath.Glob("testdata/ownership/*.txt")
	if len(files) < 8 {
		t.Fatalf("%d files under testdata/ownership, want at least 8", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out, cases := runDataFile(t, f, string(b))
			if cases == 0 {
				t.Errorf("no case in %s", f)
			}
			if *rewrite && out != string(b) {
				if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// runDataFile runs every case of one file, checks each output and returns
// the file with the outputs the code gave.
func runDataFile(t *testing.T, name, text string) (string, int) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	var out []string
	cases := 0
	for i := 0; i < len(lines); i++ {
		cmd := strings.TrimSpace(lines[i])
		out = append(out, lines[i])
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		start := i + 1
		var input []string
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			out = append(out, lines[i])
			if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "#") {
				input = append(input, l)
			}
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: %q has no ----", name, start, cmd)
		}
		var want []string
		for i++; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := runDataCase(t, fmt.Sprintf("%s:%d", name, start), cmd, input)
		if g := strings.Join(got, "\n"); g != strings.Join(want, "\n") && !*rewrite {
			t.Errorf("%s:%d: %s\ngot:\n%s\nwant:\n%s", name, start, cmd, g, strings.Join(want, "\n"))
		}
		out = append(append(out, "----"), got...)
		if i < len(lines) {
			out = append(out, "")
		}
		cases++
	}
	return strings.Join(out, "\n") + "\n", cases
}

func runDataCase(t *testing.T, where, cmd string, input []string) []string {
	args := strings.Fields(cmd)
	h := History{KeyTruth: true}
	seen := map[string]bool{}
	for _, l := range input {
		e := parseDataEvent(t, where, l)
		h.Events = append(h.Events, e)
		if e.Op != "" && !seen[e.Proc] {
			seen[e.Proc] = true
			h.Clients = append(h.Clients, e.Proc)
		}
	}
	for _, a := range args[1:] {
		if c, ok := strings.CutPrefix(a, "clients="); ok {
			h.Clients = strings.Split(c, ",")
		} else {
			t.Fatalf("%s: unknown argument %q", where, a)
		}
	}
	switch args[0] {
	case "ownership":
		n, v := Ownership(h)
		if n == 0 {
			return []string{"ok"}
		}
		out := []string{v.String()}
		if n > 1 {
			out = append(out, fmt.Sprintf("%d violations", n))
		}
		return out
	case "holds":
		m := newKeyTruth(h)
		for i := range h.Events {
			m.step(&h.Events[i])
		}
		var out []string
		for _, c := range h.Clients {
			hd := m.holds[c]
			if hd == nil {
				hd = &hold{}
			}
			s := fmt.Sprintf("%s: %s depth=%d", c, hd.state(), hd.depth)
			if hd.acquired {
				s += fmt.Sprintf(" at=%d lease=%s until=%d", hd.at, hd.lease, hd.until)
			}
			if hd.dead > 0 {
				s += fmt.Sprintf(" dead=%d", hd.dead)
			}
			if hd.read {
				s += " read"
			}
			out = append(out, s)
		}
		return out
	}
	t.Fatalf("%s: unknown command %q", where, args[0])
	return nil
}

// parseDataEvent reads one event line (see the file's comment).
func parseDataEvent(t *testing.T, where, l string) Event {
	f := strings.Fields(l)
	if len(f) < 4 {
		t.Fatalf("%s: %q: want time, process, kind and op (or a touch's del|expire)", where, l)
	}
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", where, l, err)
		}
		return n
	}
	e := Event{T: num(f[0]), Proc: f[1], Kind: event.Kind(f[2])}
	if e.Kind == event.KindKeyTouch {
		e.Result = event.Result(f[3])
	} else {
		e.Op = event.Op(f[3])
	}
	for _, kv := range f[4:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "id":
			e.OpID = num(v)
		case "until":
			e.Until = num(v)
		case "lease", "owner":
			e.Detail = v
		case "mode":
			e.Result = event.Result(v)
		case "by":
			e.Peer = v
		case "held":
			e.Held = strings.Split(v, ";")
		default:
			t.Fatalf("%s: %q: unknown field %q", where, l, k)
		}
	}
	return e
}
