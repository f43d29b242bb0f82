// Package event is the vocabulary of a run's history, declared once: the
// kinds of event the engine, the nodes, the clients and the storage record
// (Kind), the client operations (Op), the outcomes compared on them
// (Result), the fencing mode a protected resource checks (Fencing) and the
// class of an unsafe verdict (Class).
//
// Every type is a string and every constant's value is the word written
// into trace files, their SHA-256 hashes and results.json: changing a
// value changes every trace hash. The package imports nothing of locksim,
// so the simulator, the checkers and the lock contract all share it.
package event

// Kind is what an event records (the trace's "k").
type Kind string

// Engine events (Proc "world", "sentinel" or a node's name).
const (
	KindHeal        Kind = "heal"        // the faults were lifted: the liveness phase begins
	KindStop        Kind = "stop"        // the run ended
	KindFault       Kind = "fault"       // a scheduled fault began (Detail says it)
	KindFaultEnd    Kind = "fault-end"   // a scheduled fault ended
	KindPause       Kind = "pause"       // a targeted pause stopped a process
	KindCrash       Kind = "crash"       // a node crashed
	KindRestart     Kind = "restart"     // a node restarted
	KindFailover    Kind = "failover"    // the sentinel promoted a replica
	KindDemote      Kind = "demote"      // the sentinel turned an old primary into a replica
	KindReconfigure Kind = "reconfigure" // the sentinel re-pointed a replica
	KindSentinel    Kind = "sentinel"    // a real sentinel's announcement (the real-Redis arm)
	KindZKLeader    Kind = "zk-leader"   // a consensus member became leader
	KindZKExpire    Kind = "zk-expire"   // a consensus session expired
)

// Node events.
const (
	// KindCmd: the node ran Cmd for Peer and replied Reply. Kept in the
	// trace and its hash, not in the checkers' history unless asked for.
	KindCmd Kind = "cmd"
	// KindKeyTouch: a command by Peer deleted (Result del) or re-timed
	// (Result expire) a lock key while it held the value client Detail set.
	KindKeyTouch Kind = "key-touch"
)

// Client events: an operation's call and its outcome, a lease's renewal,
// and the workload's own errors.
const (
	KindCall         Kind = "call"          // an operation began (Op, OpID)
	KindOK           Kind = "ok"            // it succeeded
	KindFail         Kind = "fail"          // it failed, surely without effect
	KindUnknown      Kind = "unknown"       // its outcome is unknown (a timeout)
	KindRenew        Kind = "renew"         // a holder extended its lease (Op acquire)
	KindError        Kind = "error"         // the client could not run (a lock that failed to build)
	KindSectionError Kind = "section-error" // a critical section's own error
	KindExit         Kind = "exit"          // the process's program returned
	// KindRenewFail: a holder stopped believing it holds (Op acquire,
	// locks.Env.RenewFailed): its hold ends at the event.
	KindRenewFail Kind = "renew-fail"
)

// Storage events (Proc "store"): the protected resource's own record of
// every read and write, accepted (Result ok) or refused (Result fenced).
const (
	KindStoreRead  Kind = "store-read"
	KindStoreWrite Kind = "store-write"
)

// Op is a client operation (the trace's "op").
type Op string

// The client operations.
const (
	OpAcquire Op = "acquire"
	OpRelease Op = "release"
	OpRead    Op = "read"  // a read of the protected resource
	OpWrite   Op = "write" // a write of the protected resource
)

// Result is an event's outcome or mode (the trace's "result").
type Result string

// The results compared on events.
const (
	// ResultOK and ResultFenced: a storage record's outcome (accepted,
	// refused by the fencing check).
	ResultOK     Result = "ok"
	ResultFenced Result = "fenced"
	// ResultDel and ResultExpire: what a key-touch did to the key (deleted
	// it, re-timed it).
	ResultDel    Result = "del"
	ResultExpire Result = "expire"
	// ResultRead and ResultWrite: an acquire ok's hold mode. A shared
	// (read) hold of a read-write lock is ResultRead; an exclusive hold is
	// "" (or ResultWrite).
	ResultRead  Result = "read"
	ResultWrite Result = "write"
)

// Fencing is what the protected resource must check for a lock to be safe
// beyond its lease: the storage's mode.
type Fencing string

// The fencing modes.
const (
	FenceNone     Fencing = "none"      // the resource checks nothing
	FenceMaxToken Fencing = "max-token" // reject a token lower than the highest seen (Kleppmann)
	// FenceMaxTokenStrict also rejects an equal token from another owner.
	FenceMaxTokenStrict Fencing = "max-token-strict"
	FenceOwnerCAS       Fencing = "owner-cas" // compare-and-set on the holder's random token (antirez)
	FenceVersion        Fencing = "version"   // optimistic version check, no lock at all
	// FenceMaxTokenWrite checks writes only: a write with a token lower
	// than the highest written is rejected, reads are never refused nor
	// raise the highest token (Kleppmann's storage, which max-token
	// strengthens by fencing the read of a read-modify-write too).
	FenceMaxTokenWrite Fencing = "max-token-write"
)

// Class says which claim an unsafe run broke, worst first:
//
//   - ClassDoubleHold: two clients believed they held the lock at the same
//     instant (a lease overlap; not counted for a fenced lock, whose claim
//     is the resource's).
//   - ClassResource: the protected resource broke: the storage lost an
//     update or accepted a stale write, or the clients' history is not
//     linearizable.
//   - ClassOwnership: neither of those, but a client deleted or re-timed
//     the lock key while another client held it.
type Class string

// The classes of an unsafe run.
const (
	ClassDoubleHold Class = "double-hold"
	ClassResource   Class = "resource"
	ClassOwnership  Class = "ownership"
)
