package run

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseFaults: whatever the bytes, a --faults file decodes to at most
// 1000 faults or to an error naming the file on one line, and never
// panics; what decodes encodes to JSON that decodes to the same faults.
//
//	go test -run '^$' -fuzz FuzzParseFaults ./run/
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{`[]`, `null`, `[{"kind":"crash","start":1000000000,"duration":2000000000,"targets":["n0"]}]`,
		`[{"kind":"client-pause","targets":["c0"],"duration":1,"at":"after-check"},{"kind":"partition","from":["c0"],"to":["n1"],"one_way":true}]`,
		`[{"kind":"clock-jump","targets":["n0"],"jump":-9223372036854775808}]`, `[{"kind":"loss","loss_prob":0.5,"delay":1e3}]`,
		`[{"at_phase":1}]`, `[] []`, `[{}`, `{"kind":"crash"}`, `[null, {}]`, `[` + strings.Repeat(`{},`, 1001) + `{}]`, "\xef\xbb\xbf[]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fs, err := ParseFaults("f.json", data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "f.json: ") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error %q: want one line starting with the file name", msg)
			}
			return
		}
		if len(fs) > maxFaults {
			t.Fatalf("%d faults accepted, more than %d", len(fs), maxFaults)
		}
		again, err := json.Marshal(fs)
		if err != nil {
			t.Fatalf("accepted faults do not encode: %v", err)
		}
		fs2, err := ParseFaults("again.json", again)
		if err != nil {
			t.Fatalf("%s: the encoding of accepted faults is refused: %v", again, err)
		}
		if again2, _ := json.Marshal(fs2); !bytes.Equal(again, again2) {
			t.Fatalf("decode-encode is not stable:\n%s\n%s", again, again2)
		}
	})
}

// FuzzTraceHeader: whatever a trace file's first line, ReadHeader returns
// a header or an error naming the file, never panics; an accepted header
// writes back as a line that reads as the same header; building the run
// it names (Header.Job, what replay does next) errs or builds, never
// panics.
//
//	go test -run '^$' -fuzz FuzzTraceHeader ./run/
func FuzzTraceHeader(f *testing.F) {
	for _, s := range []string{
		`{"locksim_run":{"locksim":"locksim dev","scenario":"default","lock":"redlock","seed":1,"clients":5,"nodes":5,"duration_ns":10000000000,"liveness_ns":5000000000,"faults":[]}}`,
		`{"locksim_run":{"locksim":"x","scenario":"clock-jump","lock":"set-nx-cad","seed":18446744073709551615,"clients":2,"nodes":1,"duration_ns":1000000000,"liveness_ns":1000000000,"faults":[{"kind":"crash","start":1,"duration":1,"targets":["n0"]}],"hold_min_ns":1,"hold_max_ns":2,"fairness":true,"step":3}}`,
		`{"locksim_run":{"scenario":"no-such.yaml","lock":"redlock","scenario_sha256":"00"}}`,
		`{"locksim_run":null}`, `{"locksim_run":{"lock":"nope"}}`, `{"locksim_end":{}}`, `[]`, ``, "\n",
		`{"locksim_run":{"lock":"redlock","clients":-1,"nodes":100000,"duration_ns":-5}}`,
	} {
		f.Add([]byte(s + "\n"))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ReadHeader("t.jsonl", bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "t.jsonl: ") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error %q: want one line starting with the file name", msg)
			}
			return
		}
		var line bytes.Buffer
		if err := WriteHeader(&line, h); err != nil {
			t.Fatalf("an accepted header does not write: %v", err)
		}
		h2, err := ReadHeader("again.jsonl", bufio.NewReader(&line))
		if err != nil {
			t.Fatalf("%s: the written header is refused: %v", line.Bytes(), err)
		}
		if !reflect.DeepEqual(normalHeader(h), normalHeader(h2)) {
			t.Fatalf("header changed in a write and read:\n%+v\n%+v", h, h2)
		}
		if h.Clients > 50 || h.Nodes > 9 || h.DurationNS > 60e9 || h.LivenessNS > 60e9 {
			return // building a large world is slow, not wrong
		}
		if _, err := h.Job("t.jsonl"); err != nil && (!strings.HasPrefix(err.Error(), "t.jsonl: ") || strings.ContainsAny(err.Error(), "\n\r")) {
			t.Fatalf("Job: error %q: want one line starting with the file name", err)
		}
	})
}

// normalHeader is h as JSON reads it back: an empty list of faults and
// none are the same.
func normalHeader(h Header) Header {
	if len(h.Faults) == 0 {
		h.Faults = nil
	}
	for i := range h.Faults {
		f := &h.Faults[i]
		for _, l := range []*[]string{&f.Targets, &f.From, &f.To} {
			if len(*l) == 0 {
				*l = nil
			}
		}
	}
	return h
}
