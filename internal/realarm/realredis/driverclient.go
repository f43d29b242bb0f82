package realredis

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/internal/realarm/driver"
	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/scenarios"
	"github.com/locksim/locksim/sim"
)

// driverClient is scenarios.RunClient's loop for a client whose lock is a
// driver: acquire → critical section → release → think, each step a
// request to the driver, recorded as a Go client records it (the same
// events, so the checkers, stories and timelines read it unchanged). The
// storage's read and write are requests too: the driver sends them on its
// own connection, so a SIGSTOP of the driver delays the real write.
type driverClient struct {
	p     *proc
	j     *Job
	dp    *driverProc
	wl    scenarios.Workload
	lock  string
	op    int64
	value string // the lease's value while held
	token int64
	// until0 is the true time the held lease's validity ends, as the
	// driver reported it (0: no validity signal); Workload.Careful
	// reads it.
	until0 int64
	// startErr is why the driver could not be started or did not answer
	// start (reported when the client would have begun).
	startErr error

	// renews: the driver declared renew in its start reply and the
	// world's lock renews (locks.Info.Renews), so the harness renews the
	// held lease every interval (a third of the TTL, the Go watchdog's
	// cadence) while a section runs on. renewing is cleared by a renewal
	// that did not succeed (as the Go watchdog stops), next is the
	// monotonic reading at which the next renewal is due, and holding the
	// acquisition's op id the renewals name.
	renews   bool
	renewing bool
	interval time.Duration
	next     time.Duration
	holding  int64
	// fenced: the world's storage fences on a token (--lock fencing): an
	// acquire ok must carry one.
	fenced bool
}

// startDrivers starts every client's driver and exchanges start, all at
// once, before the run's true time 0 (Run): a Python or Node start-up on
// a loaded machine takes seconds. Errors wait in each client.
func (w *world) startDrivers() {
	j := w.job
	if j.Driver == nil {
		return
	}
	var wg sync.WaitGroup
	for _, p := range w.procs {
		c := &driverClient{p: p, j: j, wl: j.Parts.Workload, lock: j.Job.Lock.ID}
		p.drv = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			dp, err := startDriver(p, j.Driver)
			if err != nil {
				c.startErr = err
				return
			}
			c.dp = dp
			c.startErr = c.start()
		}()
	}
	wg.Wait()
}

// closeDrivers ends every driver process still running (the clients close
// their own as they return; this is for a run that fails before).
func (w *world) closeDrivers() {
	for _, p := range w.procs {
		if p.drv != nil && p.drv.dp != nil {
			p.drv.dp.close()
		}
	}
}

// runDriverClient runs p's workload through its driver until the run
// stops. A driver that breaks the protocol ends the client with a harness
// error (the run's verdict is then unknown, unless it already showed an
// overlap); its process and temp dir are gone when this returns, even by
// runtime.Goexit at the stop.
func runDriverClient(p *proc, j *Job) {
	c := p.drv
	if c == nil || c.dp == nil || c.startErr != nil {
		if c != nil && c.startErr != nil {
			p.w.harnessError(c.startErr)
		}
		return
	}
	defer c.dp.close()
	c.dp.mu.Lock()
	c.dp.lastCont = p.w.now()
	c.dp.mu.Unlock()
	go c.dp.watch()
	for !p.Stopping() {
		if err := c.round(); err != nil {
			if !errors.Is(err, errDriverStop) {
				// A broken driver is ended now, and its holder's belief
				// with it: a driver killed for hanging acts on nothing
				// after, and must not overlap the next holder.
				c.dp.close()
			}
			c.endBeliefAtExit()
			c.broken(err)
			return
		}
		p.Sleep(c.uniform(c.wl.ThinkMin, c.wl.ThinkMax))
	}
}

func (c *driverClient) broken(err error) {
	if errors.Is(err, errDriverStop) {
		runtime.Goexit()
	}
	c.p.w.harnessError(err)
}

func (c *driverClient) start() error {
	cfg := c.p.w.cfg
	req := driver.Request{Type: driver.Start, Protocol: driver.Version, Client: c.p.name, Key: c.wl.Key,
		TTLms: c.j.TTL.Milliseconds(), TimeoutMs: max(1, cfg.Redis.ReadTimeout.Milliseconds()),
		Tries: 3, RetryMs: max(1, (c.j.TTL / 3).Milliseconds())}
	if c.p.w.repl != nil {
		// Sentinel names the primary: the driver asks it (nodes stay empty).
		req.Sentinels, req.MasterName, req.Routes = c.p.drvSentinels, masterName, c.p.drvRoutes
	} else {
		for _, n := range c.p.nodes {
			req.Nodes = append(req.Nodes, n.Options().Addr)
		}
	}
	if c.p.store != nil {
		req.Storage = c.p.store.Options().Addr
	}
	l, err := c.dp.request(req)
	if err != nil {
		return err
	}
	if l.Result != driver.OK {
		return fmt.Errorf("driver %s (client %s), request start: result %s: %s", c.dp.d.Name, c.p.name, l.Result, l.Error)
	}
	c.dp.bound = requestBound(c.dp.d, c.j.TTL, c.p.w.cfg.Liveness)
	c.dp.cancels = l.Cancel
	c.renews = l.Renew && c.j.Parts.Lock.Renews
	c.interval = max(time.Millisecond, c.j.TTL/3)
	c.fenced = fencesOnToken(c.j.Parts.Lock.Fencing)
	return nil
}

func (c *driverClient) uniform(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(c.p.Rand().Int64N(int64(hi-lo)))
}

func (c *driverClient) call(op event.Op, ev sim.Event) int64 {
	c.op++
	ev.Kind, ev.Op, ev.OpID, ev.Lock = event.KindCall, op, c.op, c.lock
	c.p.Record(ev)
	return c.op
}

// ret records a reply's result as a Go client records an error's class.
func (c *driverClient) ret(op event.Op, id int64, l driver.Line, ev sim.Event) {
	ev.Kind, ev.Op, ev.OpID, ev.Lock = resultKind(l.Result), op, id, c.lock
	if l.Result != driver.OK {
		ev.Detail = l.Error
	}
	c.recordAt(ev, l.At)
}

// resultKind is the event kind of a reply's result (driver.Parse accepts
// only these three).
func resultKind(result string) event.Kind {
	switch result {
	case driver.OK:
		return event.KindOK
	case driver.Fail:
		return event.KindFail
	}
	return event.KindUnknown
}

// recordAt is p.Record with the event stamped at true time t (a reply's
// receipt), not when the client goroutine got to it.
func (c *driverClient) recordAt(ev sim.Event, t int64) {
	w, p := c.p.w, c.p
	w.mu.Lock()
	defer w.mu.Unlock()
	if t == 0 {
		t = w.now()
	}
	ev.T, ev.Proc, ev.Local = t, p.name, p.clk.Local(t)
	w.addLocked(ev)
}

// until is the true time the driver's clock reaches the validity it
// reported (0: no validity signal). The driver's clock is this machine's
// plus the client's offset (libfaketime's file), the clock p.Now models,
// so an absolute valid_until_ms converts exactly; a relative validity_ms
// counts from the line's receipt.
//
// A validity the run cannot mean never reaches the arithmetic: one that
// ends before the run began (a Unix time in seconds, say) is an error
// naming the driver, the client, the request and the line; one that ends
// after the run's end is the end (clamped: a belief through the end is
// all a history can hold, and the checkers judge nothing later). So a
// driver claiming validities of 1e14 ms believes through the run, never
// past an overflow that would end the belief before it began.
func (c *driverClient) until(l driver.Line, req string) (int64, error) {
	w := c.p.w
	end := int64(w.cfg.Duration + w.cfg.Liveness)
	var ms float64 // the validity's end on the driver's clock, in ms from its now
	switch {
	case l.ValidUntilMs != nil:
		ms = *l.ValidUntilMs - float64(c.p.Now().UnixNano())/1e6
	case l.ValidityMs != nil:
		ms = *l.ValidityMs
	default:
		return 0, nil
	}
	w.mu.Lock()
	now := w.now()
	// ns from now to the run's end (or back to its start), doubled and a
	// second more for a drifting or jumped clock: within these the
	// conversion below cannot overflow, and its result is clamped.
	ahead := 2*float64(end-now) + 1e9
	behind := 2*float64(now) + 1e9
	w.mu.Unlock()
	switch d := ms * 1e6; {
	case d > ahead:
		return end, nil
	case d < -behind:
		what := fmt.Sprintf("valid_until_ms %.17g", *l.ValidUntilMs)
		if l.ValidUntilMs == nil {
			what = fmt.Sprintf("validity_ms %.17g", *l.ValidityMs)
		}
		return 0, fmt.Errorf("driver %s (client %s), request %s: %s ends %v before the driver's clock now, before the run began (want a Unix time in milliseconds on the driver's clock): %s",
			c.dp.d.Name, c.p.name, req, what, time.Duration(-d).Round(time.Millisecond), driver.Quote(c.dp.last()))
	}
	var t int64
	if l.ValidUntilMs != nil {
		v := *l.ValidUntilMs
		t = c.p.TrueDeadline(time.UnixMilli(int64(v)).Add(time.Duration((v - float64(int64(v))) * float64(time.Millisecond))))
	} else {
		d := time.Duration(ms * float64(time.Millisecond))
		w.mu.Lock()
		if d <= 0 {
			t = l.At + int64(d)
		} else {
			t = l.At + int64(c.p.clk.TrueAfter(d))
		}
		w.mu.Unlock()
	}
	return min(max(t, 1), end), nil
}

func (c *driverClient) round() error {
	id := c.call(event.OpAcquire, sim.Event{})
	c.p.Point("acquire") // the workload's own points, as scenarios/program.go marks them (faults.HarnessPoints)
	l, err := c.dp.request(driver.Request{Type: driver.Acquire})
	if err != nil {
		return err
	}
	if l.Result != driver.OK {
		c.ret(event.OpAcquire, id, l, sim.Event{})
		return nil
	}
	if c.fenced && l.Token <= 0 {
		return fmt.Errorf("driver %s (client %s), request acquire: the world's storage fences on a token (lock %s) and the reply has none (\"token\"): %s", c.dp.d.Name, c.p.name, c.j.Parts.Lock.ID, driver.Quote(c.dp.last()))
	}
	if c.until0, err = c.until(l, driver.Acquire); err != nil {
		return err
	}
	c.ret(event.OpAcquire, id, l, sim.Event{Until: c.until0, Token: l.Token, Detail: l.Value})
	c.value, c.token, c.holding = l.Value, l.Token, id
	c.renewing, c.next = c.renews, c.p.Mono()+c.interval
	if err := c.section(); err != nil {
		return err
	}
	id = c.call(event.OpRelease, sim.Event{Detail: c.value})
	c.p.Point("releasing")
	l, err = c.dp.request(driver.Request{Type: driver.Release, Value: c.value})
	if err != nil {
		return err
	}
	c.ret(event.OpRelease, id, l, sim.Event{})
	c.holding = 0
	return nil
}

// endBeliefAtExit ends the current hold's belief when the driver's
// process ended while it held: a dead process acts on nothing, so its
// belief must not overlap the next holder's (the harness learns of the
// exit only at its next request). Recorded as a Go holder's
// Env.RenewFailed is, at the moment stdout closed.
func (c *driverClient) endBeliefAtExit() {
	c.dp.mu.Lock()
	at := c.dp.eofAt
	c.dp.mu.Unlock()
	if c.holding == 0 || at.IsZero() {
		return
	}
	t := max(int64(at.Sub(c.p.w.start)), 1)
	c.recordAt(sim.Event{Kind: event.KindRenewFail, Op: event.OpAcquire, OpID: c.holding, Lock: c.lock, Detail: "the driver process ended while it held: its belief ends"}, t)
	c.holding = 0
}

// section is the workload's critical section (scenarios' section for the
// pool and the counter, and its careful variant): read, hold, the
// before-write point, write with the lease's owner and what was read.
func (c *driverClient) section() error {
	p := c.p
	hold := c.uniform(c.wl.HoldMin, c.wl.HoldMax)
	owner := c.value
	if owner == "" {
		owner = fmt.Sprintf("%s/%d", p.name, c.op)
	}
	if c.wl.Resource == scenarios.ResourceNone {
		if _, err := c.hold(hold, false); err != nil {
			return err
		}
		p.Point("before-write")
		return nil
	}
	id := c.call(event.OpRead, sim.Event{})
	rd := []string{"STORE.READ", scenarios.PoolKey}
	if c.token > 0 {
		rd = append(rd, strconv.FormatInt(c.token, 10), owner)
	}
	l, err := c.dp.request(driver.Request{Type: driver.Read, Command: rd})
	if err != nil {
		return err
	}
	val, ver, own, perr := parseState(l)
	if perr != nil && l.Result == driver.OK {
		l.Result, l.Error = driver.Unknown, perr.Error()
	}
	c.ret(event.OpRead, id, storeResult(l), sim.Event{Value: val})
	if l.Result != driver.OK {
		return nil
	}
	next := val + 1
	if c.wl.Resource == scenarios.ResourcePool {
		if val <= 0 {
			return nil // sold out
		}
		next = val - 1
	}
	// Careful code (scenarios' Workload.Careful): hold no longer than the
	// belief (renewals extend it), and write nothing once it ran out; the
	// check comes before the before-write point, as in
	// scenarios.RunClient.
	if believes, err := c.hold(hold, c.wl.Careful); err != nil || !believes {
		return err
	}
	p.Point("before-write")
	id = c.call(event.OpWrite, sim.Event{Value: next, Token: c.token, Detail: owner})
	wr := []string{"STORE.WRITE", scenarios.PoolKey, strconv.FormatInt(next, 10), strconv.FormatInt(c.token, 10), owner, own, strconv.FormatInt(ver, 10)}
	l, err = c.dp.request(driver.Request{Type: driver.Write, Command: wr})
	if err != nil {
		return err
	}
	c.ret(event.OpWrite, id, storeResult(l), sim.Event{Value: next, Token: c.token})
	return nil
}

// hold takes d of the client's time in the section. While the lease is
// renewed (c.renewing) it sends renew whenever one is due (every
// c.interval from the acquisition, on the client's monotonic clock, as the
// Go watchdog sleeps its interval; a pause delays it with the holder).
// Careful code (careful, with a validity to follow) stops at the belief's
// end: hold then reports false (write nothing).
//
// The section ends d after it began, however long the renewals take: the
// Go watchdog renews beside the section, in a goroutine of its own, so a
// slow renewal (a library retrying a failed extend) must not lengthen it.
func (c *driverClient) hold(d time.Duration, careful bool) (bool, error) {
	careful = careful && c.until0 != 0
	end := c.p.Mono() + d
	for {
		step := max(end-c.p.Mono(), 0)
		if careful {
			step = min(step, max(c.left(), 0))
		}
		if c.renewing {
			step = min(step, max(c.next-c.p.Mono(), 0))
		}
		c.p.Sleep(step)
		if careful && c.left() <= 0 {
			return false, nil
		}
		if c.p.Mono() >= end {
			return true, nil
		}
		if c.renewing && c.p.Mono() >= c.next {
			if err := c.renew(); err != nil {
				return false, err
			}
		}
	}
}

// renew sends one renew request. An ok reply is the new belief: recorded
// as the Go watchdog's Env.Renewed is (a "renew" event of the acquisition,
// Until the validity the reply gave; 0 when the driver gives no validity
// signal), stamped at the reply's receipt. A fail or unknown reply stops
// the renewals and leaves the belief at the last validity (the Go
// watchdog stops at a failed renewal and reports nothing).
func (c *driverClient) renew() error {
	c.next = c.p.Mono() + c.interval
	l, err := c.dp.request(driver.Request{Type: driver.Renew, Value: c.value})
	if err != nil {
		return err
	}
	if l.Result != driver.OK {
		c.renewing = false
		return nil
	}
	until, err := c.until(l, driver.Renew)
	if err != nil {
		return err
	}
	switch {
	case until == 0 && c.until0 != 0:
		return fmt.Errorf("driver %s (client %s), request renew: an ok with no validity, where the acquire's reply gave one: %s", c.dp.d.Name, c.p.name, driver.Quote(c.dp.last()))
	case until != 0 && c.until0 == 0:
		return fmt.Errorf("driver %s (client %s), request renew: an ok with a validity, where the acquire's reply gave none (a belief until release): %s", c.dp.d.Name, c.p.name, driver.Quote(c.dp.last()))
	}
	c.until0 = max(c.until0, until)
	c.recordAt(sim.Event{Kind: event.KindRenew, Op: event.OpAcquire, OpID: c.holding, Lock: c.lock, Until: until}, l.At)
	return nil
}

// left is how long the holder still believes it holds the lease, on its
// own clock (the validity the driver reported, against the client's
// clock now).
func (c *driverClient) left() time.Duration {
	w := c.p.w
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	return time.Duration(c.p.clk.Local(c.until0) - c.p.clk.Local(now))
}

// fencesOnToken reports whether a storage in mode f checks a fencing
// token (the max-token modes): a driver's acquire must then give one.
func fencesOnToken(f locks.Fencing) bool {
	switch f {
	case locks.FenceMaxToken, locks.FenceMaxTokenStrict, locks.FenceMaxTokenWrite:
		return true
	}
	return false
}

// storeResult classes a storage reply as resource.Client does: a FENCED
// error is a clean refusal (fail); any other error may have taken effect.
func storeResult(l driver.Line) driver.Line {
	if l.Result == driver.OK {
		return l
	}
	if len(l.Error) >= 6 && l.Error[:6] == "FENCED" {
		l.Result = driver.Fail
	} else {
		l.Result = driver.Unknown
	}
	return l
}

// parseState reads STORE.READ's reply: value, version, owner.
func parseState(l driver.Line) (val, ver int64, owner string, err error) {
	if l.Result != driver.OK {
		return 0, 0, "", nil
	}
	if len(l.Reply) != 3 {
		return 0, 0, "", fmt.Errorf("storage read: %d fields, want 3", len(l.Reply))
	}
	v, err1 := strconv.ParseInt(l.Reply[0], 10, 64)
	r, err2 := strconv.ParseInt(l.Reply[1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, "", fmt.Errorf("storage read: bad integers %q", l.Reply)
	}
	return v, r, l.Reply[2], nil
}
