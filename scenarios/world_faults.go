package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/resource"
	"github.com/locksim/locksim/sim"
)

// The world build's fault stages (worldBuild, world.go): what faults may
// name, the swarm's draw and the file's written faults.

// faultTargets lists what faults may name in this world.
func (b *worldBuild) faultTargets() {
	b.known = map[string]bool{sim.SentinelName: b.replicated, resource.Name: true}
	if b.replicated {
		for g := 0; g < b.groups; g++ {
			b.groupNames = append(b.groupNames, fmt.Sprintf("g%d", g))
		}
	}
	// A consensus lock's world faults its coordination service's members
	// where others fault Redis nodes (its one Redis node is idle).
	b.faultNodes = b.nodeNames
	if b.coord != nil {
		b.faultNodes = b.coord.Members
	}
	for _, n := range append(append([]string(nil), b.faultNodes...), b.clientNames...) {
		b.known[n] = true
	}
	b.known[faults.Leader] = b.coord != nil // resolved at the fault's start by each arm
	b.procGroups = map[string][]string{GroupClients: b.clientNames, GroupNodes: b.faultNodes}
	if b.copied {
		b.procGroups[GroupNodes] = b.faultNodes[:b.groupSize] // the file's one group, then copied
	}
}

// swarm draws the file's random fault schedule, if it has one.
func (b *worldBuild) swarm() error {
	f, info := b.f, b.info
	if f.Swarm == nil {
		return nil
	}
	kinds := []faults.Kind(nil)
	for _, k := range f.Swarm.Kinds {
		if faults.Kind(k) == faults.Failover && !b.replicated {
			continue // no failover without replicas
		}
		kinds = append(kinds, faults.Kind(k))
	}
	if f.Swarm.Kinds != nil && len(kinds) == 0 {
		return f.errAt("swarm.kinds", "no kind applies to lock %s (failover needs a replicated topology)", info.ID)
	}
	bounds := faults.Bounds{
		Duration: b.cfg.Duration, Clients: b.clientNames, Nodes: append(append([]string(nil), b.faultNodes...), resource.Name),
		Replicated: b.replicated, MinFaults: f.Swarm.MinFaults, MaxFaults: f.Swarm.MaxFaults, Kinds: kinds,
	}
	mapNames := func(names []string) ([]string, error) { return b.perGroup(expand(names, b.procGroups)) }
	if err := f.aimSwarm(&bounds, info, b.ttl, mapNames); err != nil {
		return err
	}
	fs, err := faults.Swarm(sim.NewStreams(b.seed).Get("faults"), bounds)
	if err != nil {
		return f.errAt("swarm", "%v", err)
	}
	b.cfg.Faults = fs
	return nil
}

// fileFaults adds the file's written faults that apply to the lock, each
// repetition its own fault, and sorts the schedule.
func (b *worldBuild) fileFaults() error {
	f, info, cfg := b.f, b.info, &b.cfg
	filterID := f.faultFilterID(info)
	for i, fs := range f.Faults {
		path := fmt.Sprintf("faults[%d]", i)
		if len(fs.Locks) > 0 && !slices.Contains(fs.Locks, filterID) {
			continue
		}
		one, err := b.fileFault(path, fs)
		if err != nil {
			return err
		}
		n, every := 1, time.Duration(0)
		if fs.Repeat != nil && fs.Repeat.Count > 1 {
			n = fs.Repeat.Count
			if every, err = b.span(path+".repeat.every", fs.Repeat.Every, 0); err != nil {
				return err
			}
		}
		for r := 0; r < n; r++ {
			g := one
			g.Start += time.Duration(r) * every
			if g.Start >= cfg.Duration {
				what := path + ".start"
				if r > 0 {
					what = path + ".repeat"
				}
				return f.errAt(what, "occurrence %d starts at %v, not before the end of the %v safety phase (lock %s): it would never happen", r+1, g.Start, cfg.Duration, info.ID)
			}
			cfg.Faults = append(cfg.Faults, g)
		}
	}
	if len(cfg.Faults) > MaxFileFaults {
		return f.errAt("faults", "%d faults for lock %s: more than %d", len(cfg.Faults), info.ID, MaxFileFaults)
	}
	faults.Sort(cfg.Faults)
	return nil
}

// fileFault is one written fault at path, its names mapped to the world's
// and checked against it.
func (b *worldBuild) fileFault(path string, fs FaultSpec) (faults.Fault, error) {
	f, info := b.f, b.info
	one, err := fs.fault(b.ttl)
	if err != nil {
		return one, f.errAt(path, "%v (lock %s)", err, info.ID)
	}
	for _, side := range []struct {
		field string
		names *[]string
	}{{"targets", &one.Targets}, {"from", &one.From}, {"to", &one.To}} {
		if len(*side.names) == 0 {
			continue
		}
		mapped, err := b.perGroup(expand(*side.names, b.procGroups))
		if err != nil {
			return one, f.errAt(path+"."+side.field, "%v", err)
		}
		*side.names = mapped
	}
	for _, t := range append(append(slices.Clone(one.Targets), one.From...), one.To...) {
		isGroup := slices.Contains(b.groupNames, t)
		switch {
		case one.Kind == faults.Failover && !isGroup:
			return one, f.errAt(path+".targets", "failover: %q is not a primary/replica group of lock %s's world (%s)", t, info.ID, strings.Join(b.groupNames, ", "))
		case one.Kind != faults.Failover && isGroup:
			return one, f.errAt(path, "%s: %q is a group, which only a failover names (a node of it: n0, n1, …)", one.Kind, t)
		}
	}
	if err := one.Validate(func(n string) bool { return b.known[n] || slices.Contains(b.groupNames, n) }); err != nil {
		return one, f.errAt(faultField(path, err), "%v in the world of lock %s (%s)", err, info.ID, worldNames(b.faultNodes, b.clientNames, b.replicated))
	}
	if one.Kind == faults.SlotMigration && !b.cluster {
		return one, f.errAt(path+".kind", "slot-migration moves the lock key's slot between a Redis Cluster's shards, and lock %s's world is not a cluster (restrict the fault with locks:)", info.ID)
	}
	if one.Kind == faults.SlotMigration && b.clusters > 1 {
		return one, f.errAt(path+".kind", "slot-migration moves a slot within one Redis Cluster, and lock %s runs on %d independent clusters (restrict the fault with locks:)", info.ID, b.clusters)
	}
	if one.Kind == faults.Failover && !b.replicated {
		return one, f.errAt(path+".kind", "failover needs a replicated topology, and lock %s's world is not (set topology.replicated, or restrict the fault with locks:)", info.ID)
	}
	return one, nil
}

func expand(names []string, groups map[string][]string) []string {
	if names == nil {
		return nil
	}
	var out []string
	for _, n := range names {
		if g, ok := groups[n]; ok {
			out = append(out, g...)
			continue
		}
		out = append(out, n)
	}
	return out
}

func worldNames(nodes, clients []string, replicated bool) string {
	s := fmt.Sprintf("nodes %s, clients %s, %s", span(nodes), span(clients), resource.Name)
	if replicated {
		s += ", " + sim.SentinelName
	}
	return s
}

func span(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return names[0] + ".." + names[len(names)-1]
}

// fault resolves a scripted fault for a lock's TTL (its first occurrence).
func (fs FaultSpec) fault(ttl time.Duration) (faults.Fault, error) {
	out := faults.Fault{Kind: faults.Kind(fs.Kind), Targets: fs.Targets, From: fs.From, To: fs.To, OneWay: fs.OneWay,
		DriftPPM: fs.DriftPPM, LossProb: fs.LossProb, At: fs.At, On: fs.On, NodeClock: fs.NodeClock}
	for _, s := range []struct {
		name string
		v    Span
		dst  *time.Duration
	}{{"start", fs.Start, &out.Start}, {"duration", fs.Duration, &out.Duration}, {"jump", fs.Jump, &out.Jump}, {"delay", fs.Delay, &out.Delay}} {
		d, err := s.v.Resolve(ttl)
		if err != nil {
			return faults.Fault{}, fmt.Errorf("%s: %v", s.name, err)
		}
		*s.dst = d
	}
	return out, nil
}
