package realredis

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/sim"
)

// NotReplayable is what every real run's summary says.
const NotReplayable = "no: a real run is not replayable; the seed fixes the fault schedule and the workload's choices, not the interleaving"

// Judged is a judged real run.
type Judged struct {
	*run.Judged
	Real *Job
	Info *Info
	// TraceCut is set when WriteHistoryMax cut the trace at its bound.
	TraceCut *TraceCut
}

// Outcome is the run's outcome (run.Judged.Outcome, computed once) with
// the harness's largest stall and machine verdict (stall.go): what a
// sweep's line, a parity cell and the untested rule read.
func (jd *Judged) Outcome() run.Outcome {
	o := jd.Judged.Outcome()
	o.StallMaxMS, o.Machine = float64(jd.Info.Stalls.MaxNS)/1e6, jd.MachineVerdict()
	return o
}

// RunAndJudge runs the job and judges its history with the simulator's
// checkers. An error means no history (set-up failed, or interrupted).
func (j *Job) RunAndJudge(ctx context.Context, tempParent string) (*Judged, error) {
	res, info, err := j.Run(ctx, tempParent)
	if res == nil {
		return nil, err
	}
	res.TraceSHA256 = historyHash(res.History)
	info.ReadRTT = readRTT(res.History)
	return &Judged{Judged: j.Judge(res, err), Real: j, Info: info}, nil
}

// RTT summarises round trips: quantiles of a set of durations.
type RTT struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

func (r RTT) String() string {
	if r.N == 0 {
		return "none measured"
	}
	return fmt.Sprintf("p50 %v, p99 %v, max %v (%d reads)", r.P50.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond), r.N)
}

// readRTT measures the storage reads of a history (one command each,
// call to return): the real round trip through a proxy, on this machine.
func readRTT(evs []sim.Event) RTT {
	calls := map[string]int64{}
	var ds []time.Duration
	for _, e := range evs {
		if e.Op != event.OpRead {
			continue
		}
		key := e.Proc + "/" + strconv.FormatInt(e.OpID, 10)
		switch e.Kind {
		case event.KindCall:
			calls[key] = e.T
		case event.KindOK:
			if t, ok := calls[key]; ok {
				ds = append(ds, time.Duration(e.T-t))
			}
		}
	}
	if len(ds) == 0 {
		return RTT{}
	}
	slices.Sort(ds)
	q := func(f float64) time.Duration { return ds[min(len(ds)-1, int(f*float64(len(ds))))] }
	return RTT{N: len(ds), P50: q(0.5), P99: q(0.99), Max: ds[len(ds)-1]}
}

// historyHash is the SHA-256 of the history as JSON Lines (as the
// simulator hashes its trace); for a real run it names this history only.
func historyHash(evs []sim.Event) string {
	h := sha256.New()
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Repro is the command line of a real run (not a replay: it runs again).
func (j *Job) Repro() string {
	if j.Driver != nil {
		return fmt.Sprintf("%s --backend real --ttl %v --driver %s", j.Spec.Repro(), j.TTL, j.Driver.Path)
	}
	return fmt.Sprintf("%s --backend real --ttl %v", j.Spec.Repro(), j.TTL)
}

// RedisVersion is redis-server's version line ("" if it cannot be run).
func RedisVersion() string {
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// WriteSummary writes the real run's summary: what ran and how, then the
// simulator's summary of the judged history (its "virtual time" is real
// time here, and its repro runs the real arm again).
func (jd *Judged) WriteSummary(w io.Writer, r *run.Report) {
	line := func(key, format string, a ...any) {
		fmt.Fprintf(w, "%-16s%s\n", key+":", fmt.Sprintf(format, a...))
	}
	j := jd.Job
	if t := j.Config.Topology; t.Shards > 0 {
		how, links := "a failover's promotion by CLUSTER FAILOVER TAKEOVER after it", "client→node, replica→node"
		if t.ClusterFailover {
			how, links = "failed over by the cluster's own election", "client→node, replica→node, node→node cluster bus"
		}
		shards := fmt.Sprintf("%d shards", t.Shards)
		if t.Clusters > 1 {
			shards = fmt.Sprintf("%d independent clusters of %d shards each", t.Clusters, t.Shards)
		}
		line("backend", "real: %d redis-server processes in cluster mode, %s (cluster-node-timeout %v, replication lag %v; %s), each on its own address in 127.0.0.0/8 (%s), the storage and one toxiproxy proxy per link (%s) in-process",
			len(j.Config.Nodes), shards, t.DownAfter, t.ReplLag, how, orUnknown(RedisVersion()), links)
	} else if j.Config.Topology.Replicated {
		line("backend", "real: %d redis-server processes (a primary and its replicas) and %d redis-sentinel processes (quorum %d, down-after %v, failover-timeout %v, internal periods × %.4g), each on its own address in 127.0.0.0/8 (%s), the storage and one toxiproxy proxy per link (client→node, client→Sentinel, Sentinel→node, replica→node with the replication lag %v) in-process",
			len(j.Config.Nodes), nSentinels, quorum, j.Config.Topology.DownAfter, failoverTimeout(jd.Real.TTL), jd.Info.Scale, orUnknown(RedisVersion()), j.Config.Topology.ReplLag)
	} else {
		line("backend", "real: %d redis-server processes on %s (%s), the storage and one toxiproxy proxy per client→server link in-process", len(j.Config.Nodes), Loopback, orUnknown(RedisVersion()))
	}
	own := "the lock's own TTL is " + jd.Real.OrigTTL.String()
	if j.Lock.TTL == 0 {
		own = "the lock has no TTL: scaled as if it were " + NominalTTL.String()
	}
	line("ttl", "%v (%s: every duration of the scenario × %.4g; --ttl changes it)", jd.Real.TTL, own, jd.Info.Scale)
	for _, n := range jd.Info.NotInjected {
		line("not injected", "%s", n)
	}
	if jd.Info.NodeClocks != "" {
		line("node clocks", "%s", jd.Info.NodeClocks)
	}
	line("replayable", "%s", NotReplayable)
	line("wall time", "%v (set-up and teardown included)", jd.Info.Wall.Round(time.Millisecond))
	line("round trips", "storage reads %s; the simulator's model: 0.2 ms + an exponential of mean 0.3 ms each way; go-redis read timeout here %v", jd.Info.ReadRTT, j.Config.Redis.ReadTimeout)
	jd.writeStalls(line) // stall.go
	var buf bytes.Buffer
	r.WriteSummary(&buf)
	sc := bufio.NewScanner(&buf)
	reach, nf := jd.FaultReach(), -1 // reach.go: each fault's line, after "faults:", says it
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "faults:"):
			nf = 0
		case nf >= 0 && nf < len(reach) && strings.HasPrefix(l, strings.Repeat(" ", 16)):
			l += "  [" + reach[nf] + "]"
			nf++
		default:
			nf = -1
		}
		switch {
		case strings.HasPrefix(l, "virtual time:"):
			l = fmt.Sprintf("%-16s%s", "real time:", strings.TrimSpace(strings.TrimPrefix(l, "virtual time:")))
		case strings.HasPrefix(l, "events:"):
			l = fmt.Sprintf("%-16s%d history events", "events:", r.TraceEvents)
		case strings.HasPrefix(l, "trace file:") && jd.TraceCut != nil:
			l += "; " + jd.TraceCut.String()
		case strings.HasPrefix(l, "commands:"):
			continue // the simulator's count of Redis commands; not measured here
		}
		fmt.Fprintln(w, l)
		if u := jd.Untested(); u != "" && strings.HasPrefix(l, "verdict:") {
			fmt.Fprintf(w, "%-16s%s: this safe verdict tested nothing of its scenario (a report draws such a cell untested)\n", "untested:", u)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}

// WriteCounterexample writes the simulator's counterexample files (the
// history slice, porcupine's HTML) and the counterexample timeline drawn
// from the real history, DIR/timeline.png.
func (jd *Judged) WriteCounterexample(r *run.Report, dir string) (string, error) {
	if r.Counterexample == nil {
		return "", nil
	}
	if err := r.WriteCounterexample(dir); err != nil {
		return "", err
	}
	fig, err := charts.Timeline(jd.History, jd.Check, charts.TimelineOptions{
		Caption: []string{"real Redis (" + orUnknown(RedisVersion()) + "), TTL " + jd.Real.TTL.String() + "; not replayable", jd.Real.Repro()}})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "timeline.png")
	if err := charts.Save(fig, path); err != nil {
		return "", err
	}
	return path, nil
}
