package realredis

import (
	"slices"
	"strings"
	"testing"
)

// A node's persistence becomes redis-server's AOF flags: none turns the
// AOF off, the others turn it on with that appendfsync (no included: the
// simulator's persistence no is appendfsync no, not an AOF left off).
func TestServerArgsPersistence(t *testing.T) {
	for p, want := range map[string]string{
		"none":     "--appendonly no",
		"everysec": "--appendonly yes --appendfsync everysec",
		"always":   "--appendonly yes --appendfsync always",
		"no":       "--appendonly yes --appendfsync no",
	} {
		a := (&server{port: 1, dir: t.TempDir(), persistence: p}).args()
		i := slices.Index(a, "--appendonly")
		if i < 0 || !strings.HasPrefix(strings.Join(a[i:], " "), want) {
			t.Errorf("persistence %s: args %q, want %q", p, a, want)
		}
	}
}
