package catalogue

import (
	"context"
	"time"

	"github.com/locksim/locksim/locks"
)

// Canaries: locks broken on purpose, each a correct design of the catalogue
// with one known bug put back in. They prove that the harness can fail:
// run/canary_test.go runs each under random faults and demands that
// the checkers catch it. They are registered (Get finds them, scenarios
// build them) but marked Info.Canary: IDs and 'locksim list locks' leave
// them out; 'locksim list locks --canaries' shows them.
//
//	canary-no-owner-release    set-nx-cad whose release is a plain DEL
//	canary-redlock-half        Redlock with quorum N/2 instead of N/2+1
//	canary-redlock-no-elapsed  Redlock whose validity is TTL − drift, counted
//	                           from the end of the acquisition round
//	canary-renew-no-owner      watchdog whose renewal is a plain PEXPIRE
func init() {
	Register(locks.Info{
		ID:        "canary-no-owner-release",
		Design:    "CANARY: set-nx-cad (SET NX PX, random value) whose release is a plain DEL with no owner check",
		Source:    "broken on purpose (set-nx-cad minus its compare-and-delete)",
		Weakness:  "a holder whose key expired while it still works deletes the next holder's key: ownership violations, then overlaps",
		Topology:  locks.Single,
		Canary:    true,
		Params:    cadParams(3*time.Second, true),
		Configure: configureCAD(true, func(c SetNXCAD) locks.Lock { return &canaryNoOwnerRelease{c} }),
	})
	Register(locks.Info{
		ID:        "canary-redlock-half",
		Design:    "CANARY: Redlock (redis.io parameters) that counts N/2 nodes as a majority instead of N/2+1",
		Source:    "broken on purpose (redlock with an off-by-one quorum)",
		Weakness:  "two clients that each reach half of the nodes (2 of 5) both hold the lock",
		Topology:  locks.Independent,
		Canary:    true,
		Params:    redlockParams(),
		Configure: configureRedlock(func(l *Redlock) { l.quorum = func(n int) int { return max(1, n/2) } }),
	})
	Register(locks.Info{
		ID:        "canary-redlock-no-elapsed",
		Design:    "CANARY: Redlock (redis.io parameters) whose validity is TTL - drift from the end of the acquisition round, not reduced by the time the round took",
		Source:    "broken on purpose (redlock without the elapsed-time term)",
		Weakness:  "a round slowed after the majority was reached (a pause, slow nodes) outlives the keys it set first: another client takes them while the holder still believes",
		Topology:  locks.Independent,
		Canary:    true,
		Params:    redlockParams(),
		Configure: configureRedlock(func(l *Redlock) { l.noElapsed = true }),
	})
	Register(locks.Info{
		ID:        "canary-renew-no-owner",
		Design:    "CANARY: watchdog (30 s lease, renewal every 10 s) whose renewal is a plain PEXPIRE key 30000, without checking the value",
		Source:    "broken on purpose (watchdog minus the owner check in its renewal)",
		Weakness:  "a holder whose key was lost (expired, node restart) keeps renewing whoever holds the key now, and keeps believing it holds the lock",
		Topology:  locks.Single,
		Canary:    true,
		Renews:    true,
		Params:    watchdogParams(),
		Configure: configureWatchdog(true),
	})
}

// canaryNoOwnerRelease is set-nx-cad released by a plain DEL (the bug of
// set-nx-del, with set-nx-cad's random value and retries).
type canaryNoOwnerRelease struct{ SetNXCAD }

// Release implements Lock: DEL key, whoever holds it (0 deleted: ErrNotOwner).
func (l *canaryNoOwnerRelease) Release(ctx context.Context, _ locks.Lease) error {
	return plainDel(ctx, l.Env)
}
