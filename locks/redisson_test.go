package locks_test

import (
	"testing"
	"time"
)

func TestRedissonScratch(t *testing.T) {
	info := mustGet(t, "redisson-lock")
	cfg := world(1, 40*time.Second, 0, once(info, 25*time.Second))
	cfg.HistoryCommands = true
	res := run(t, cfg)
	for _, c := range commands(res, "c0") {
		t.Logf("%v %s -> %s", sec(c.T), c.Cmd, c.Reply)
	}
	for _, e := range res.History {
		if e.Proc == "c0" && e.Kind != "cmd" {
			t.Logf("%+v", e)
		}
	}
}
