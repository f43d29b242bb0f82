package run

import (
	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/sim"
)

// Cause says why the first violation's first holder lost its key
// (checker.Cause), from the run's key log (sim.Result.KeyLog): "" when the
// run has no violation. It is set on Judged.Check.First.Cause when a run
// is judged.
func Cause(j *Judged) string {
	if j == nil || j.Check.First == nil || j.Result == nil {
		return ""
	}
	if len(j.Result.KeyLog) == 0 && !j.Result.KeyLogCapped {
		return "cause unknown: the run kept no log of the lock's keys (a lock whose state lives in a consensus store, or a run on the real arm)"
	}
	return checker.Cause(j.History, KeyLog(j.Result, j.Job.Config), j.Check.First)
}

// KeyLog converts a run's key log into the checkers' form, with each
// node's persistence from its configuration.
func KeyLog(res *sim.Result, cfg sim.Config) checker.KeyLog {
	l := checker.KeyLog{Capped: res.KeyLogCapped, Changes: make([]checker.KeyChange, len(res.KeyLog)),
		Persistence: map[string]string{}}
	for i, e := range res.KeyLog {
		l.Changes[i] = checker.KeyChange{T: e.T, Sent: e.Sent, Local: e.Local, Node: e.Node, Key: e.Key, Peer: e.Peer, Cmd: e.Cmd,
			Was: e.Was, Now: e.Now, Existed: e.Existed, Exists: e.Exists, WasExpireAt: e.WasExpireAt, ExpireAt: e.ExpireAt, WasBy: e.WasBy}
	}
	for _, n := range cfg.WithDefaults().Nodes {
		l.Persistence[n.Name] = string(n.Persistence)
	}
	return l
}
