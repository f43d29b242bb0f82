package sim

import (
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	cfg := Config{Seed: 1, Duration: 2 * time.Second, Liveness: time.Second, Clients: 3,
		Nodes: []NodeConfig{{}, {}}}.WithDefaults()
	cfg.Program = func(p *Proc) {
		for !p.Stopping() {
			ok, err := p.Nodes()[0].SetNX(p.Context(), "k", p.Name(), 100*time.Millisecond).Result()
			p.Record(Event{Kind: "op", Op: "setnx", Detail: errString(err), Value: b2i(ok)})
			p.Sleep(10 * time.Millisecond)
		}
	}
	res, err := Run(TestBubble(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v %s", res.Stats, res.TraceSHA256)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
