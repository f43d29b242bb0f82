package sim_test

// This file is package sim_test because it reads locks/catalogue, which
// imports sim (through internal/zk): it hands the catalogue's script
// bodies to this package's own tests, which cannot import it.

import (
	"testing"

	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/sim"
)

// redissonScripts are the Redisson scripts as locks/catalogue sends them,
// by their name in the native table (native.go).
var redissonScripts = map[string]string{
	"redisson-lock":         catalogue.RedissonLockScript,
	"redisson-unlock":       catalogue.RedissonUnlockScript,
	"redisson-renew":        catalogue.RedissonRenewScript,
	"redisson-fair-lock":    catalogue.RedissonFairLockScript,
	"redisson-fair-unlock":  catalogue.RedissonFairUnlockScript,
	"redisson-fair-failed":  catalogue.RedissonFairAcquireFailedScript,
	"redisson-read-lock":    catalogue.RedissonReadLockScript,
	"redisson-read-unlock":  catalogue.RedissonReadUnlockScript,
	"redisson-read-renew":   catalogue.RedissonReadRenewScript,
	"redisson-write-lock":   catalogue.RedissonWriteLockScript,
	"redisson-write-unlock": catalogue.RedissonWriteUnlockScript,
}

// Package inits all run before any test, so the native tests
// (native_test.go) compare the catalogue's own bodies.
func init() { sim.SetRedissonBodies(redissonScripts) }

// TestCatalogueScriptsAreNative: every catalogue script the engine runs
// natively is in its table under its name, and the copy of
// compare-and-delete this package's tests and benchmarks use is the
// catalogue's.
func TestCatalogueScriptsAreNative(t *testing.T) {
	for name, body := range redissonScripts {
		if got := sim.NativeName(body); got != name {
			t.Errorf("catalogue's %s body is native as %q", name, got)
		}
	}
	if got := sim.NativeName(catalogue.CompareAndDelete); got != "compare-and-delete" {
		t.Errorf("catalogue.CompareAndDelete is native as %q, want compare-and-delete", got)
	}
	if sim.NativeBody("compare-and-delete") != catalogue.CompareAndDelete {
		t.Errorf("native_test.go's compare-and-delete differs from catalogue.CompareAndDelete:\n%q\n%q", sim.NativeBody("compare-and-delete"), catalogue.CompareAndDelete)
	}
}
