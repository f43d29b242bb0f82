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
		{`{"re":"start","result":"ok","library":"x 1","renew":true}`, func(l Line) bool { return l.Renew }},
		{`{"re":"start","result":"ok","library":"x 1","cancel":true}`, func(l Line) bool { return l.Cancel && !l.Renew }},
		{`{"re":"acquire","result":"ok","value":"v1","token":7}`, func(l Line) bool { return l.Token == 7 }},
		{`{"re":"renew","result":"ok","valid_until_ms":1795747545635.5}`, func(l Line) bool { return l.Re == Renew && *l.ValidUntilMs == 1795747545635.5 }},
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
		{`{"re":"acquire","result":"ok","renew":true}`, `"renew" belongs in start's reply, not acquire's`},
		{`{"re":"acquire","result":"ok","token":-3}`, `token -3 is negative`},
		{`{"re":"acquire","result":"unknown","cancel":true}`, `"cancel" belongs in start's reply, not acquire's`},
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
	if got := string(Encode(Request{Type: Cancel})); got != `{"type":"cancel"}`+"\n" {
		t.Errorf("Encode(cancel) = %q", got)
	}
	if q := Quote([]byte(strings.Repeat("x", 300))); len(q) > 210 {
		t.Errorf("Quote does not cut: %d bytes", len(q))
	}
}

// TestEncodeStartSentinel: a Sentinel world's start carries sentinels,
// master_name and routes and no nodes (protocol 1's optional fields); a
// one-node world's start carries nodes and none of them.
func TestEncodeStartSentinel(t *testing.T) {
	s := string(Encode(Request{Type: Start, Protocol: Version, Client: "c0", Sentinels: []string{"127.0.0.1:1", "127.0.0.1:2"},
		MasterName: "locksim", Routes: map[string]string{"127.0.0.1:10": "127.0.0.1:20"}}))
	for _, want := range []string{`"sentinels":["127.0.0.1:1","127.0.0.1:2"]`, `"master_name":"locksim"`, `"routes":{"127.0.0.1:10":"127.0.0.1:20"}`, `"protocol":1`} {
		if !strings.Contains(s, want) {
			t.Errorf("start %s lacks %s", s, want)
		}
	}
	if strings.Contains(s, `"nodes"`) {
		t.Errorf("a Sentinel world's start names nodes: %s", s)
	}
	s = string(Encode(Request{Type: Start, Protocol: Version, Nodes: []string{"127.0.0.1:3"}}))
	if !strings.Contains(s, `"nodes":["127.0.0.1:3"]`) || strings.Contains(s, "sentinels") || strings.Contains(s, "routes") || strings.Contains(s, "master_name") {
		t.Errorf("a one-node start: %s", s)
	}
}
