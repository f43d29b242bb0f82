package sim

import (
	"encoding/json"
	"reflect"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	evt "github.com/locksim/locksim/event"
)

// TestAppendEventMatchesJSON: the trace's hand-written encoder produces the
// same bytes as encoding/json for any event, so trace hashes do not depend
// on which one wrote them.
func TestAppendEventMatchesJSON(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune("<>&\"\\\n\r\t\b\f\x00\x1f\u2028\u2029é€a "))),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
	num := rapid.OneOf(rapid.Int64(), rapid.Just(int64(0)))
	rapid.Check(t, func(t *rapid.T) {
		ev := Event{T: num.Draw(t, "t"), Proc: str.Draw(t, "p"), Kind: evt.Kind(str.Draw(t, "k")), Local: num.Draw(t, "local"),
			Peer: str.Draw(t, "peer"), Cmd: str.Draw(t, "cmd"), Reply: str.Draw(t, "reply"), Op: evt.Op(str.Draw(t, "op")),
			OpID: num.Draw(t, "op_id"), Result: evt.Result(str.Draw(t, "result")), Lock: str.Draw(t, "lock"),
			Until: num.Draw(t, "until"), Token: num.Draw(t, "token"), Value: num.Draw(t, "value"), Detail: str.Draw(t, "detail")}
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEvent(nil, &ev); string(got) != string(want) {
			t.Fatalf("encoder differs:\n got  %s\n want %s", got, want)
		}
	})
}

// TestCmdTraceText: the "cmd" event's text, which addCmd encodes from
// scratch buffers: script bodies elided, long arguments and replies cut,
// a bulk reply shown by its content.
func TestCmdTraceText(t *testing.T) {
	long := string(make([]byte, 70))
	for _, c := range []struct {
		args  []string
		reply string
		cmd   string
		line  string
	}{
		{[]string{"set", "k", "v", "px", "30500", "nx"}, "+OK\r\n", "set k v px 30500 nx", "+OK"},
		{[]string{"get", "k"}, "$5\r\nhello\r\n", "get k", "hello"},
		{[]string{"get", "k"}, "$-1\r\n", "get k", "$-1"},
		{[]string{"eval", "return redis.call('get', KEYS[1])", "1", "k"}, ":0\r\n", "eval <script 33 bytes> 1 k", ":0"},
		{[]string{"EVAL", "short", "0"}, "$2\r\nab", "EVAL short 0", "ab"},
		{[]string{"evalsha", long}, "-ERR " + long + long + "\r\n", "evalsha " + long[:61] + "...", "-ERR " + (long + long)[:72] + "..."},
		{[]string{"ping"}, "+PONG", "ping", "+PONG"},
	} {
		if got := summarize(c.args); got != c.cmd {
			t.Errorf("summarize(%q) = %q, want %q", c.args, got, c.cmd)
		}
		if got := firstLine([]byte(c.reply)); got != c.line {
			t.Errorf("firstLine(%q) = %q, want %q", c.reply, got, c.line)
		}
		// addCmd writes the same line as the event built with strings.
		for _, keep := range []bool{false, true} {
			a, b := newTrace(nil, 10, keep), newTrace(nil, 10, keep)
			a.addCmd(7, "n0", "c1", c.args, []byte(c.reply))
			b.add(Event{T: 7, Proc: "n0", Kind: "cmd", Peer: "c1", Cmd: c.cmd, Reply: c.line})
			if a.sum() != b.sum() || len(a.history) != len(b.history) || (keep && !reflect.DeepEqual(a.history[0], b.history[0])) {
				t.Errorf("addCmd(%q, %q, keep %v) differs from add", c.args, c.reply, keep)
			}
		}
	}
}

// TestParseCommands: any sequence of commands, cut anywhere, parses back
// to the complete ones and leaves the partial rest.
func TestParseCommands(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cmds := rapid.SliceOfN(rapid.SliceOfN(rapid.String(), 1, 5), 0, 4).Draw(t, "cmds")
		var buf []byte
		var ends []int
		for _, args := range cmds {
			buf = append(buf, '*')
			buf = strconv.AppendInt(buf, int64(len(args)), 10)
			buf = append(buf, "\r\n"...)
			for _, a := range args {
				buf = append(buf, '$')
				buf = strconv.AppendInt(buf, int64(len(a)), 10)
				buf = append(buf, "\r\n"...)
				buf = append(buf, a...)
				buf = append(buf, "\r\n"...)
			}
			ends = append(ends, len(buf))
		}
		cut := rapid.IntRange(0, len(buf)).Draw(t, "cut")
		got, rest, err := parseCommands(buf[:cut])
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for n < len(ends) && ends[n] <= cut {
			n++
		}
		if !reflect.DeepEqual(got, cmds[:n]) && (n > 0 || len(got) > 0) {
			t.Fatalf("parsed %q, want %q", got, cmds[:n])
		}
		start := 0
		if n > 0 {
			start = ends[n-1]
		}
		if string(rest) != string(buf[start:cut]) {
			t.Fatalf("rest %q, want %q", rest, buf[start:cut])
		}
	})
	for _, bad := range []string{
		"+OK\r\n",               // not an array
		"*0\r\n",                // no arguments
		"*-1\r\n",               // negative count
		"*+1\r\n$1\r\na\r\n",    // a sign RESP does not write
		"*1\r\n$x\r\n",          // length not a number
		"*1\r\n$-1\r\n",         // a null bulk string as an argument
		"*1\r\n$1234567890\r\n", // longer than any request
		"*1\r\n+a\r\n",          // argument not a bulk string
		"*1\n$1\r\na\r\n",       // LF without CR ends no line
	} {
		if cmds, _, err := parseCommands([]byte(bad)); err == nil {
			t.Errorf("%q parsed as %q", bad, cmds)
		}
	}
}
