package risk

import (
	"strings"
	"testing"
)

// A deeply nested file is refused before the YAML parser sees it, with an
// error naming the file and the line (it took the parser 1.6 s on 64 KiB
// of "[" unbounded).
func TestDecodeBoundsNesting(t *testing.T) {
	raw := []byte("name: x\nclasses: " + strings.Repeat("[", 20000) + "\n")
	_, err := Decode(raw, "deep.yaml")
	if err == nil || !strings.Contains(err.Error(), "deep.yaml: line 2: nested deeper than") {
		t.Fatalf("err %v, want deep.yaml: line 2: nested deeper than …", err)
	}
}
