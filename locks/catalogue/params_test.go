package catalogue

import (
	"testing"
	"time"

	"github.com/locksim/locksim/locks"
)

// TestParamTables: every table is well formed (a kind, a doc, a default
// inside its range, distinct names), a design with a table builds from
// its defaults to its registered TTL, and every duration-kind parameter is
// one Scaled scales.
func TestParamTables(t *testing.T) {
	withTable := 0
	for _, id := range AllIDs() {
		info, _ := Get(id)
		if len(info.Params) == 0 {
			continue
		}
		withTable++
		if info.Configure == nil {
			t.Errorf("%s: a table without Configure", id)
			continue
		}
		seen := map[string]bool{}
		for _, p := range info.Params {
			if seen[p.Name] || p.Name == "" || p.Kind == "" || p.Doc == "" {
				t.Errorf("%s: parameter %+v: a duplicate, or without a name, kind or doc", id, p)
			}
			seen[p.Name] = true
			if msg := p.Check(p.Default); msg != "" {
				t.Errorf("%s.%s: default %s out of its own range: %s", id, p.Name, p.Format(p.Default), msg)
			}
		}
		d, err := info.Defaults()
		if err != nil || d.TTL != info.TTL {
			t.Errorf("%s: defaults build TTL %v (%v), registered %v", id, d.TTL, err, info.TTL)
		}
		if p, ok := info.Param("ttl"); ok && p.Default.Duration != info.TTL {
			t.Errorf("%s: ttl's default %v is not the TTL %v", id, p.Default.Duration, info.TTL)
		}
		s, err := info.Scaled(0.5)
		if err != nil || s.TTL != info.TTL/2 {
			t.Errorf("%s: scaled TTL %v (%v), want %v", id, s.TTL, err, info.TTL/2)
		}
	}
	if withTable < 15 {
		t.Errorf("%d designs with a parameter table, want the catalogue's own designs and the libraries' lease", withTable)
	}
}

// TestParamsBuildTheLock: values given through the table reach the lock.
func TestParamsBuildTheLock(t *testing.T) {
	info, _ := Get("primary-replica")
	i, err := info.With(map[string]locks.Value{"wait_replicas": locks.Int(2), "tries": locks.Int(5)})
	if err != nil {
		t.Fatal(err)
	}
	l, _ := i.New(locks.Env{})
	if c := l.(*SetNXCAD); c.WaitReplicas != 2 || c.WaitTimeout != time.Second || c.Tries != 5 || c.TTL != 3*time.Second {
		t.Fatalf("primary-replica built %+v", c)
	}
	if _, err := info.With(map[string]locks.Value{"wait_timeout": locks.Dur(time.Second)}); err == nil {
		t.Errorf("wait_timeout without wait_replicas: no error")
	}
	rl, _ := Get("canary-redlock-half")
	r, err := rl.With(map[string]locks.Value{"preset": locks.Choice("seed-001"), "tries": locks.Int(7)})
	if err != nil {
		t.Fatal(err)
	}
	lk, _ := r.New(locks.Env{})
	red := lk.(*Redlock)
	if red.P.TTL != 5*time.Second || red.P.Tries != 7 || red.P.DriftFixed != 500*time.Millisecond || red.quorum == nil || r.TTL != 5*time.Second {
		t.Fatalf("canary-redlock-half with seed-001: %+v (its bug kept: %v)", red.P, red.quorum != nil)
	}
}

// TestCatalogueTTLs pins every design's lease as the catalogue registered
// it before the parameter tables (printed from d989a1e): the tables'
// defaults must build exactly these, or every trace moves.
func TestCatalogueTTLs(t *testing.T) {
	s := time.Second
	want := map[string]time.Duration{
		"canary-no-owner-release": 3 * s, "canary-redlock-half": 10 * s, "canary-redlock-no-elapsed": 10 * s, "canary-renew-no-owner": 30 * s,
		"fencing": 3 * s, "fencing-strict": 3 * s, "getset-expiry": 10 * s, "gocron": 8 * s, "primary-replica": 3 * s,
		"redislock": 3 * s, "redisson-fair": 30 * s, "redisson-lock": 30 * s, "redisson-multilock": 30 * s, "redisson-rw": 30 * s,
		"redlock": 10 * s, "redsync": 8 * s, "set-nx-cad": 3 * s, "set-nx-getdel": 3 * s, "set-nx-del": 10 * s, "setnx-del": 0,
		"setnx-expire": 10 * s, "spin-retry": 10 * s, "token-cas": 3 * s, "version-cas": 0, "watchdog": 30 * s, "zk-fencing": 3 * s, "zk-lock": 3 * s,
		// Designs added with the tables (real arm only): their lease as registered.
		"etcd-mutex": 3 * s, "etcd-fencing": 3 * s,
		// Designs added since: their lease as registered.
		"set-nx-wait": 10 * s, "redisson-wait": 30 * s, "redisson-waitaof": 30 * s,
		"cluster-set-nx-cad": 3 * s,
		"redisson-cluster":   30 * s, "redisson-wait-cluster": 30 * s, "redlock-3-clusters": 30 * s,
		// go-zero, built with -tags gozero: whole seconds + 500 ms.
		"go-zero": 3500 * time.Millisecond,
	}
	for _, id := range AllIDs() {
		info, _ := Get(id)
		w, ok := want[id]
		switch {
		case info.Unavailable != "":
			continue
		case !ok:
			t.Errorf("%s: no pinned TTL (a new design: add it here)", id)
			continue
		case info.TTL != w:
			t.Errorf("%s: TTL %v, was %v", id, info.TTL, w)
		}
		if len(info.Params) > 0 {
			if d, err := info.Defaults(); err != nil || d.TTL != w {
				t.Errorf("%s: the table's defaults build TTL %v (%v), was %v", id, d.TTL, err, w)
			}
		}
	}
}
