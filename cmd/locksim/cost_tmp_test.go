package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/locksim/locksim/sim"
)

var costSeeds = flag.Int("cost.seeds", 3, "")
var costOnly = flag.String("cost.only", "", "")

func TestCostTmp(t *testing.T) {
	f := &reportFlags{out: t.TempDir()}
	f.scenarios = *costOnly
	p, err := f.plan()
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name string
		d    time.Duration
		ev   int64
	}
	agg := map[string]*row{}
	var order []string
	b := sim.TestBubble(t)
	for _, r := range p.runs {
		if r.rs.seed > uint64(*costSeeds) {
			continue
		}
		name := r.rs.scenario + " " + r.rs.info.ID
		if r.point != nil {
			name = fmt.Sprintf("pause %s %v", r.rs.info.ID, r.rs.pause)
		}
		if agg[name] == nil {
			agg[name] = &row{name: name}
			order = append(order, name)
		}
		t0 := time.Now()
		if _, _, err := r.rs.run(b); err != nil {
			t.Fatal(err)
		}
		agg[name].d += time.Since(t0)
	}
	sort.SliceStable(order, func(i, j int) bool { return agg[order[i]].d > agg[order[j]].d })
	var cells, pts time.Duration
	per := map[string]time.Duration{}
	for _, n := range order {
		r := agg[n]
		ms := r.d / time.Duration(*costSeeds)
		fmt.Fprintf(os.Stderr, "%-45s %8.1f ms/run\n", n, float64(ms)/1e6)
		if n[:6] == "pause " {
			pts += ms
		} else {
			cells += ms
			per[n[:indexSpace(n)]] += ms
		}
	}
	fmt.Fprintf(os.Stderr, "cells %v per seed-row, pause points %v per seed-row\n", cells, pts)
	for k, v := range per {
		fmt.Fprintf(os.Stderr, "scenario %-25s %v\n", k, v)
	}
}

func indexSpace(s string) int {
	for i := range s {
		if s[i] == ' ' {
			return i
		}
	}
	return len(s)
}
