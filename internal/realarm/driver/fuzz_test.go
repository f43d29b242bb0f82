package driver

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode: whatever a driver writes on a line, Decode returns a line or
// an error on one line of text, and never panics. An accepted line is a
// point or a reply, never both, of a known request with a known result,
// within the protocol's ranges; written back as JSON it decodes to the
// same line.
//
//	go test -run '^$' -fuzz FuzzDecode ./internal/realarm/driver/
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"re":"start","result":"ok","library":"redis-py 5.0.1","renew":true}`,
		`{"re":"acquire","result":"ok","value":"v1","validity_ms":480.5}`,
		`{"re":"acquire","result":"ok","value":"v1","valid_until_ms":1795747545635.5,"token":7}`,
		`{"re":"renew","result":"ok","valid_until_ms":1e14}`,
		`{"re":"release","result":"fail","error":"not the owner"}`,
		`{"re":"read","result":"ok","reply":["300","0",""]}`,
		`{"re":"write","result":"unknown","error":"timeout"}`,
		`{"point":"after-check"}` + "\n",
		`{"point":"lunch"}`, `{"re":"acquire","result":"ok","token":1e30}`, `{"re":"acquire","result":"ok","token":-1}`,
		`{"re":"acquire","result":"ok","valid_until_ms":1e15}`, `{"re":"acquire","result":"ok","validity_ms":-1e10}`,
		`{"re":"acquire","result":"ok"} {"re":"acquire","result":"ok"}`, `{"RE":"Acquire","Result":"ok"}`,
		`{"re":"acquire","result":"ok","valid_until_ms":null}`, `{"re":"acquire","result":"ok","value":"\xff"}`,
		"hello", "", "{", `{"re":"frobnicate","result":"ok"}`, `{"re":"acquire","result":"ok","renew":true}`,
		`{"re":"start","result":"ok","cancel":true}`, `{"re":"acquire","result":"unknown","cancel":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := Decode(line)
		if err != nil {
			if msg := err.Error(); strings.ContainsAny(msg, "\n\r") || msg == "" {
				t.Fatalf("error %q: want one line of text", msg)
			}
			return
		}
		switch {
		case l.Point != "" && l.Re != "":
			t.Fatalf("accepted both a point and a reply: %+v", l)
		case l.Point != "":
			if l.Point != "acquiring" && l.Point != "after-check" && l.Point != "renewing" {
				t.Fatalf("accepted an unknown point %q", l.Point)
			}
		default:
			known := false
			for _, r := range Requests {
				known = known || r == l.Re
			}
			if !known || (l.Result != OK && l.Result != Fail && l.Result != Unknown) {
				t.Fatalf("accepted re %q result %q", l.Re, l.Result)
			}
		}
		if l.Token < 0 || l.Renew && l.Re != Start || l.Cancel && l.Re != Start ||
			l.ValidUntilMs != nil && !(*l.ValidUntilMs >= 0 && *l.ValidUntilMs <= 1e14) ||
			l.ValidityMs != nil && !(*l.ValidityMs >= -1e9 && *l.ValidityMs <= 1e9) {
			t.Fatalf("accepted a value out of the protocol's range: %+v", l)
		}
		again, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("an accepted line does not encode: %v", err)
		}
		l2, err := Decode(again)
		if err != nil {
			t.Fatalf("%s, the encoding of accepted %q, is refused: %v", again, line, err)
		}
		if !reflect.DeepEqual(l, l2) {
			t.Fatalf("decode-encode-decode differs:\n%+v\n%+v", l, l2)
		}
	})
}
