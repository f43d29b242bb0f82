package sim

import (
	"encoding/json"
	"testing"

	"pgregory.net/rapid"
)

// TestAppendEventMatchesJSON: the trace's hand-written encoder produces the
// same bytes as encoding/json for any event, so trace hashes do not depend
// on which one wrote them.
func TestAppendEventMatchesJSON(t *testing.T) {
	str := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.RuneFrom([]rune("<>&\"\\\n\r\t\b\f\x00\x1f\u2028\u2029é€a "))),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }))
	num := rapid.OneOf(rapid.Int64(), rapid.Just(int64(0)))
	rapid.Check(t, func(t *rapid.T) {
		ev := Event{T: num.Draw(t, "t"), Proc: str.Draw(t, "p"), Kind: str.Draw(t, "k"), Local: num.Draw(t, "local"),
			Peer: str.Draw(t, "peer"), Cmd: str.Draw(t, "cmd"), Reply: str.Draw(t, "reply"), Op: str.Draw(t, "op"),
			OpID: num.Draw(t, "op_id"), Result: str.Draw(t, "result"), Lock: str.Draw(t, "lock"),
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
