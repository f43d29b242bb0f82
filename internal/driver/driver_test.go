package driver

import (
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	good := []struct {
		line  string
		check func(Line) bool
	}{
		{`{"re":"acquire","result":"ok","value":"v1","validity_ms":480.5}`, func(l Line) bool { return l.Value == "v1" && l.ValidityMs != nil && *l.ValidityMs == 480.5 }},
		{`{"re":"acquire","result":"ok","value":"v1"}`, func(l Line) bool { return l.ValidityMs == nil && l.ValidUntilMs == nil }},
		{`{"re":"acquire","result":"ok","value":"v1","valid_until_ms":1795747545635.5}`, func(l Line) bool { return *l.ValidUntilMs == 1795747545635.5 }},
		{`{"re":"release","result":"fail","error":"not the owner"}`, func(l Line) bool { return l.Result == Fail }},
		{`{"point":"after-check"}` + "\n", func(l Line) bool { return l.Point == "after-check" }},
		{`{"re":"read","result":"ok","reply":["300","0",""]}`, func(l Line) bool { return len(l.Reply) == 3 }},
	}
	for _, g := range good {
		l, err := Decode([]byte(g.line))
		if err != nil || !g.check(l) {
			t.Errorf("Decode(%s) = %+v, %v", g.line, l, err)
		}
	}
	bad := []struct{ line, want string }{
		{"hello", `not a JSON object: "hello"`},
		{`{"re":"acquire","result":"ok","colour":"red"}`, `unknown field "colour"`},
		{`{"re":"frobnicate","result":"ok"}`, `unknown request "frobnicate"`},
		{`{"re":"acquire","result":"maybe"}`, `result "maybe"`},
		{`{"point":"lunch"}`, `unknown pause point "lunch"`},
		{`{"re":"acquire","result":"ok","valid_until_ms":-5}`, `valid_until_ms -5 out of range`},
		{`{"value":"x"}`, `neither a reply`},
		{`{"re":"acquire","result":"ok"} {"re":"acquire","result":"ok"}`, `more than one JSON value`},
		{`{"re":"acquire","result":"ok","point":"acquiring"}`, `both a point and a reply`},
	}
	for _, b := range bad {
		_, err := Decode([]byte(b.line))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("Decode(%s): err %v, want %q", b.line, err, b.want)
		}
	}
}

func TestEncode(t *testing.T) {
	got := string(Encode(Request{Type: Release, Value: "v1"}))
	if got != `{"type":"release","value":"v1"}`+"\n" {
		t.Errorf("Encode = %q", got)
	}
	if q := Quote([]byte(strings.Repeat("x", 300))); len(q) > 210 {
		t.Errorf("Quote does not cut: %d bytes", len(q))
	}
}
