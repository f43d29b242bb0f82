package resource

import (
	"strings"
	"testing"

	"github.com/locksim/locksim/sim"
)

// reply records what a command answered: "OK", "ERR ...", or the bulk
// strings joined by spaces.
type reply struct{ out []string }

func (r *reply) WriteOK()             { r.out = append(r.out, "OK") }
func (r *reply) WriteInt(int)         {}
func (r *reply) WriteBulk(s string)   { r.out = append(r.out, s) }
func (r *reply) WriteNull()           {}
func (r *reply) WriteError(s string)  { r.out = append(r.out, s) }
func (r *reply) WriteLen(int)         {}
func (r *reply) WriteInline(s string) { r.out = append(r.out, s) }

// exec runs one command and returns its answer.
func exec(s *Storage, client string, args ...string) string {
	var r reply
	s.Exec(0, client, args, &r, func(sim.Event) {})
	return strings.Join(r.out, " ")
}

// The sequence a client whose token order is not its lock order makes:
// c1 (token 6) reads, then c0 (token 5, the later holder) reads and writes,
// then c1's late write. Under max-token c0's read is refused (c1's read
// raised the highest token); under max-token-write reads are never
// fenced, c0's write is accepted (5 is the highest written) and c1's late
// write too (6 ≥ 5): c0's update is lost.
func TestWriteOnlyMode(t *testing.T) {
	for _, c := range []struct {
		mode                  Mode
		c0Read, c0Write, c1Wr string
	}{
		{ModeMaxToken, "FENCED token 5 < highest 6", "FENCED token 5 < highest 6", "OK"},
		{ModeMaxTokenWrite, "100 0 ", "OK", "OK"},
	} {
		s := New(Options{Mode: c.mode, Initial: map[string]int64{"pool": 100}})
		if got := exec(s, "c1", "STORE.READ", "pool", "6", "v1"); got != "100 0 " {
			t.Errorf("%s: c1's read answered %q", c.mode, got)
		}
		if got := exec(s, "c0", "STORE.READ", "pool", "5", "v0"); got != c.c0Read {
			t.Errorf("%s: c0's read answered %q, want %q", c.mode, got, c.c0Read)
		}
		if got := exec(s, "c0", "STORE.WRITE", "pool", "99", "5", "v0", "", "0"); got != c.c0Write {
			t.Errorf("%s: c0's write answered %q, want %q", c.mode, got, c.c0Write)
		}
		if got := exec(s, "c1", "STORE.WRITE", "pool", "99", "6", "v1", "", "0"); got != c.c1Wr {
			t.Errorf("%s: c1's write answered %q, want %q", c.mode, got, c.c1Wr)
		}
		// Write-only still rejects a lower token once a higher was written.
		if got := exec(s, "c0", "STORE.WRITE", "pool", "98", "5", "v0", "", "0"); !strings.HasPrefix(got, "FENCED token 5 < highest 6") {
			t.Errorf("%s: a write with token 5 after 6 answered %q, want fenced", c.mode, got)
		}
	}
	if m, err := ParseMode("max-token-write"); err != nil || m != ModeMaxTokenWrite {
		t.Errorf("ParseMode(max-token-write) = %q, %v", m, err)
	}
}
