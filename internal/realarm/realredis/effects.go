package realredis

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locksim/locksim/checker"
	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// What each fault of a real run did: the real arm's record behind reach
// and bite, in the simulator's own type (sim.FaultEffect, one per fault
// of the schedule, in sim.Result.Effects), judged by the simulator's
// rules (run.Effects), so that a summary, --json, a sweep's cells and the
// reports say "did not bite" and "untested" of a real run exactly when
// they would of a simulated one. What the real arm sees:
//
//   - Started, Armed, NoLeader: as the simulator (beginFault,
//     startFault, carryOut).
//   - LiveKeys: the live lock keys on a node fault's targets when it
//     began, read by the harness's direct connection just before it acts
//     (liveScript); a drift also counts the keys seen while it runs. A
//     "lock key" is a watched key (sim.Config.WatchKeys) or any key with
//     a TTL: a library may name its key its own way (redis-semaphore's
//     "mutex:<key>"), and a real run's nodes hold the lock's state only
//     (the protected resource is a server of its own). A node that is
//     down or stopped counts what it held when last read (before the
//     crash or the pause).
//   - Nodes: the target nodes some client sent a byte to, through its
//     link (links.go), at any time in the run.
//   - Members: the targets that are members of a real coordination
//     service (consensus.go).
//   - Messages: the chunks a partition or delay held or slowed on its
//     links (gate.go); an etcd member link it cut counts one (raft's
//     heartbeats run on it all the time; realcoord cuts it, unseen).
//   - Promoted, PromotedLacking: the node Sentinel promoted after a
//     failover (+switch-master), and whether it lacked a lock key (or
//     held another value) that was live on the crashed primary.
//   - OwnsKey and sim.Result.KeysSeen stay false: the real arm does not
//     know which client wrote a key's value. run.Effects then judges a
//     client pause by the history (a hold, or a winning acquisition in
//     flight), as it does a consensus store's.
//   - LockClock, LockMono: a Go lock's reads of its process clock
//     (lockClock). A driver's reads cannot be seen, but libfaketime moves
//     its whole process's clock (driver.go), whatever the library reads,
//     so a driver client counts as reading its clock all through the
//     safety phase: a clock fault on it is never called unreached.

// liveScript returns the live lock keys on a node, as key, value pairs:
// every key named in ARGV or with a TTL; a value is the key's string, or
// its type for a key of another type.
var liveScript = redis.NewScript(`
local watch = {}
for _, k in ipairs(ARGV) do watch[k] = true end
local out = {}
for _, k in ipairs(redis.call('KEYS', '*')) do
  if watch[k] or redis.call('PTTL', k) > 0 then
    local t = redis.call('TYPE', k)['ok']
    local v = t
    if t == 'string' then v = redis.call('GET', k) end
    out[#out + 1] = k
    out[#out + 1] = v
  end
end
return out
`)

// liveTimeout bounds one read of a node's live keys.
const liveTimeout = 500 * time.Millisecond

// maxLiveKeys bounds the keys kept of one read.
const maxLiveKeys = 1024

// liveKeys returns the live lock keys on node n now (key to value). A
// node that is down or stopped, or that does not answer in time, gives
// what it held when last read.
func (w *world) liveKeys(n int) map[string]string {
	m, _ := w.readLive(n)
	return m
}

// readLive is liveKeys, and whether it read the node now (false: what it
// held when last read).
func (w *world) readLive(n int) (map[string]string, bool) {
	s := w.servers[n]
	s.mu.Lock()
	admin, gone := s.admin, s.down || s.stopped
	s.mu.Unlock()
	last := func() (map[string]string, bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.lastLive[n], false
	}
	if gone || admin == nil {
		return last()
	}
	ctx, cancel := context.WithTimeout(w.ctx, liveTimeout)
	defer cancel()
	args := make([]any, len(w.cfg.WatchKeys))
	for i, k := range w.cfg.WatchKeys {
		args[i] = k
	}
	kv, err := liveScript.Run(ctx, admin, nil, args...).StringSlice()
	if err != nil {
		return last()
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv) && len(m) < maxLiveKeys; i += 2 {
		m[kv[i]] = kv[i+1]
	}
	w.mu.Lock()
	if w.lastLive == nil {
		w.lastLive = map[int]map[string]string{}
	}
	w.lastLive[n] = m
	w.mu.Unlock()
	return m, true
}

// lacks reports whether node n lacks one of the key values in want
// (missing, or holding another value); false when it cannot be read now
// (what it lacks is then not known).
func (w *world) lacks(n int, want map[string]string) bool {
	if len(want) == 0 {
		return false
	}
	have, now := w.readLive(n)
	if !now {
		return false
	}
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return true
		}
	}
	return false
}

// effectLocked returns fault i's record (0-based), or nil; w.mu held.
func (w *world) effectLocked(i int) *sim.FaultEffect {
	if i < 0 || i >= len(w.effects) {
		return nil
	}
	return &w.effects[i]
}

// noteEffect applies fn to fault i's record under w.mu.
func (w *world) noteEffect(i int, fn func(e *sim.FaultEffect)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.effectLocked(i); e != nil {
		fn(e)
	}
}

// noteNodeFault records, for fault i on nodes idx (just before it acts
// on them), the live lock keys they hold, and its targets; its members
// are counted too (a coordination service's).
func (w *world) noteNodeFault(i int, f faults.Fault, idx []int) {
	live := 0
	for _, n := range idx {
		live += len(w.liveKeys(n))
	}
	members := len(w.coordTargets(f.Targets))
	w.noteEffect(i, func(e *sim.FaultEffect) {
		e.LiveKeys += live
		e.Members = max(e.Members, members)
		w.targets[i] = append(w.targets[i], idx...)
	})
}

// noteDriftKeys counts, for a drift on nodes idx that has not yet seen
// one, the lock keys live on them now (a drift decides when the keys
// written while it runs expire).
func (w *world) noteDriftKeys(i int, idx []int) {
	w.mu.Lock()
	e := w.effectLocked(i)
	seen := e == nil || e.LiveKeys > 0
	w.mu.Unlock()
	if seen {
		return
	}
	live := 0
	for _, n := range idx {
		live += len(w.liveKeys(n))
	}
	w.noteEffect(i, func(e *sim.FaultEffect) { e.LiveKeys += live })
}

// pendingFailover is a failover whose promotion is awaited: the lock keys
// live on the primary it crashed.
type pendingFailover struct {
	fault int
	want  map[string]string
}

// promoted records Sentinel's promotion of node n (+switch-master) for
// the failovers awaiting one: whether n lacked a key live on the crashed
// primary.
func (w *world) promoted(n int) {
	w.mu.Lock()
	pend := w.failing
	w.failing = nil
	w.mu.Unlock()
	for _, pf := range pend {
		lacking := w.lacks(n, pf.want)
		keyed := len(pf.want) > 0
		w.noteEffect(pf.fault, func(e *sim.FaultEffect) { e.NotePromotion(w.servers[n].name, keyed, lacking) })
	}
}

// failoverEnded drops fault i's awaited promotion when its crash ends:
// a promotion Sentinel makes later is not this failover's (it would be
// judged against keys read at this crash, long expired).
func (w *world) failoverEnded(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failing = slices.DeleteFunc(w.failing, func(pf pendingFailover) bool { return pf.fault == i })
}

// finishEffects returns the run's effects: each node fault's targets
// counted in Nodes if some client sent them a byte, each link fault's
// held chunks, and the clients' clock reads (one per client, -1: never).
func (w *world) finishEffects() (effects []sim.FaultEffect, wall, mono []int64) {
	used := map[string]bool{}
	held := map[int]int{}
	if w.links != nil {
		w.links.mu.Lock()
		all := w.links.all
		w.links.mu.Unlock()
		for _, l := range all {
			if l.up.carried.Load() > 0 {
				used[l.client+"->"+l.server] = true
			}
			for _, st := range []*linkState{l.up, l.down} {
				st.mu.Lock()
				for f, c := range st.held {
					held[f] += c
				}
				st.mu.Unlock()
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	effects = make([]sim.FaultEffect, len(w.effects))
	copy(effects, w.effects)
	for i := range effects {
		e := &effects[i]
		e.Messages += held[i+1]
		e.Nodes = 0
		seen := map[int]bool{}
		for _, n := range w.targets[i] {
			if seen[n] {
				continue
			}
			seen[n] = true
			for _, p := range w.procs {
				if used[p.name+"->"+w.servers[n].name] {
					e.Nodes++
					break
				}
			}
		}
	}
	end := int64(w.cfg.Duration) - 1
	wall, mono = make([]int64, len(w.procs)), make([]int64, len(w.procs))
	for i, p := range w.procs {
		wall[i], mono[i] = p.lockClock.Load()-1, p.lockMono.Load()-1
		if p.drv != nil {
			wall[i], mono[i] = end, end // a driver's reads are not seen: counted as read
		}
	}
	return effects, wall, mono
}

// lockClock is the clock a process hands its lock (locks.Env.Clock): the
// process's own, noting when the lock reads it in the safety phase, as
// the simulator's (sim.Proc.LockClock).
type lockClock struct{ p *proc }

func (c lockClock) Now() time.Time {
	c.p.noteRead(&c.p.lockClock)
	return c.p.Now()
}

// Mono is the lock's monotonic reading, noted apart from Now (a drift
// reaches it, a jump never does).
func (c lockClock) Mono() time.Duration {
	c.p.noteRead(&c.p.lockMono)
	return c.p.Mono()
}

// Sleep is noted as a monotonic reading (a drift stretches it).
func (c lockClock) Sleep(d time.Duration) {
	c.p.noteRead(&c.p.lockMono)
	c.p.Sleep(d)
}

// noteRead stores 1 + now if now is in the safety phase (0: never).
func (p *proc) noteRead(last *atomic.Int64) {
	if t := p.w.now(); t < int64(p.w.cfg.Duration) {
		last.Store(t + 1)
	}
}

// Report is run.Judged.Report with, for each fault the real arm did not
// carry out at all (Info.Skipped), that reason as why it was not
// injected (run.Effects knows only the simulator's reasons).
func (jd *Judged) Report(repro string) *run.Report {
	r := jd.Judged.Report(repro)
	for i := range r.FaultEffects {
		if why := jd.Info.Skipped[i]; why != "" && !r.FaultEffects[i].Injected {
			r.FaultEffects[i].Why = "the real arm did not carry it out: " + why
		}
	}
	return r
}

// Untested says why the run, if safe, did not test its scenario, by the
// rule a report's cells are drawn "untested" by (run.Untested: no
// fault bit, or the lock never read the client clock set wrong); "" when
// it did, or when its verdict is not safe.
func (jd *Judged) Untested() string {
	if jd.Judged.Outcome().Verdict != checker.VerdictSafe {
		return ""
	}
	var t run.Tally
	t.Add(jd.Judged.Outcome(), jd.Job.Config.Seed)
	return t.Untested()
}
