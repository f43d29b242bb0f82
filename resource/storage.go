// Package resource is the protected resource: a storage service that runs
// as its own simulated process behind the same network as the Redis nodes,
// and the client side the workloads use to reach it.
//
// The storage keeps integer objects (a bonus pool, a counter). Every write
// carries what a fencing scheme needs; the storage's mode decides what it
// checks:
//
//	none       accept every write
//	max-token         reject a token lower than the highest seen (Kleppmann's
//	                  rule; an equal token is accepted)
//	max-token-strict  max-token, and also reject an equal token from another
//	                  owner (a repeated token: what S14's failover produces)
//	max-token-write   max-token on writes only: a token-carrying read is
//	                  served, never refused, and raises nothing (Kleppmann's
//	                  storage checks the write alone; max-token also fences
//	                  the read of a read-modify-write)
//	owner-cas  accept only if the object's owner is still the one the writer
//	           read, then make the writer the owner (antirez's compare-and-set
//	           on the holder's random token)
//	version    accept only if the object's version is still the one the
//	           writer read (optimistic concurrency, “Practice: a Redis lock” (Tencent Cloud))
//
// The storage records every accepted and rejected write in the trace; it is
// the ground truth the resource checker compares client beliefs with.
package resource

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/locksim/locksim/event"
	"github.com/locksim/locksim/sim"
)

// Mode is the storage's fencing mode: event.Fencing, declared once with
// the history's vocabulary (locks.Fencing is the same type).
type Mode = event.Fencing

// The modes, event's constants.
const (
	ModeNone     = event.FenceNone
	ModeMaxToken = event.FenceMaxToken
	// ModeMaxTokenStrict also refuses an equal token from another owner.
	ModeMaxTokenStrict = event.FenceMaxTokenStrict
	ModeOwnerCAS       = event.FenceOwnerCAS
	ModeVersion        = event.FenceVersion
	// ModeMaxTokenWrite checks the token on writes only.
	ModeMaxTokenWrite = event.FenceMaxTokenWrite
)

// ParseMode checks a mode name.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNone, ModeMaxToken, ModeMaxTokenStrict, ModeMaxTokenWrite, ModeOwnerCAS, ModeVersion:
		return m, nil
	case "":
		return ModeNone, nil
	}
	return "", fmt.Errorf("storage mode %q: want none, max-token, max-token-strict, max-token-write, owner-cas or version", s)
}

// Name is the storage process's name in fault targets and traces.
const Name = "store"

// MaxObjects bounds the objects a storage holds; writes to new keys beyond
// it are rejected with an error.
const MaxObjects = 1024

type object struct {
	value    int64
	version  int64
	owner    string
	maxToken int64
	maxOwner string
}

// Storage is the storage service's state machine (a sim.Service).
type Storage struct {
	mode    Mode
	objects map[string]*object
}

// Options configure a storage.
type Options struct {
	Mode Mode
	// Initial values of objects (e.g. the bonus pool).
	Initial map[string]int64
}

// New builds a storage.
func New(o Options) *Storage {
	s := &Storage{mode: o.Mode, objects: map[string]*object{}}
	if s.mode == "" {
		s.mode = ModeNone
	}
	for k, v := range o.Initial {
		s.objects[k] = &object{value: v}
	}
	return s
}

// Service returns a sim.ServiceConfig that builds this storage afresh for
// every run.
func Service(o Options) sim.ServiceConfig {
	return sim.ServiceConfig{Name: Name, New: func() sim.Service { return New(o) }}
}

// Exec implements sim.Service. Commands:
//
//	STORE.READ key [token owner]     -> [value, version, owner], or an
//	                                    error "FENCED <why>"
//	STORE.WRITE key value token owner expect-owner expect-version
//	                                 -> OK, or an error "FENCED <why>"
func (s *Storage) Exec(now int64, client string, args []string, r sim.Reply, record func(sim.Event)) {
	cmd := strings.ToUpper(args[0])
	switch {
	case cmd == "STORE.READ" && (len(args) == 2 || len(args) == 4):
		o := s.objects[args[1]]
		if o == nil {
			o = &object{}
		}
		if len(args) == 4 && (s.mode == ModeMaxToken || s.mode == ModeMaxTokenStrict) {
			// A fenced read: a reader with a lower token than the storage
			// has seen is refused, and the read raises the highest token,
			// so an older holder cannot write after a newer one read (the
			// read-modify-write form of Kleppmann's fencing).
			token, err := strconv.ParseInt(args[2], 10, 64)
			if err != nil {
				r.WriteError("ERR token must be an integer")
				return
			}
			if why := s.fence(o, token, args[3], "", 0); why != "" {
				r.WriteError("FENCED " + why)
				record(sim.Event{Proc: Name, Kind: event.KindStoreRead, Peer: client, Lock: args[1], Result: event.ResultFenced, Token: token, Detail: why})
				return
			}
			if token > o.maxToken {
				o.maxToken, o.maxOwner = token, args[3]
			}
		}
		r.WriteLen(3)
		r.WriteBulk(strconv.FormatInt(o.value, 10))
		r.WriteBulk(strconv.FormatInt(o.version, 10))
		r.WriteBulk(o.owner)
		record(sim.Event{Proc: Name, Kind: event.KindStoreRead, Peer: client, Lock: args[1], Value: o.value, Detail: fmt.Sprintf("version=%d owner=%s", o.version, o.owner)})
	case cmd == "STORE.WRITE" && len(args) == 7:
		key := args[1]
		value, err1 := strconv.ParseInt(args[2], 10, 64)
		token, err2 := strconv.ParseInt(args[3], 10, 64)
		expVersion, err3 := strconv.ParseInt(args[6], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			r.WriteError("ERR value, token and expect-version must be integers")
			return
		}
		owner, expOwner := args[4], args[5]
		o := s.objects[key]
		if o == nil {
			if len(s.objects) >= MaxObjects {
				r.WriteError(fmt.Sprintf("ERR storage full (%d objects)", MaxObjects))
				return
			}
			o = &object{}
			s.objects[key] = o
		}
		if why := s.fence(o, token, owner, expOwner, expVersion); why != "" {
			r.WriteError("FENCED " + why)
			record(sim.Event{Proc: Name, Kind: event.KindStoreWrite, Peer: client, Lock: key, Result: event.ResultFenced, Value: value, Token: token, Detail: why})
			return
		}
		o.value = value
		o.version++
		o.owner = owner
		if token > o.maxToken || (token == o.maxToken && o.maxOwner == "") {
			o.maxToken, o.maxOwner = token, owner
		}
		r.WriteOK()
		record(sim.Event{Proc: Name, Kind: event.KindStoreWrite, Peer: client, Lock: key, Result: event.ResultOK, Value: value, Token: token, Detail: fmt.Sprintf("version=%d owner=%s", o.version, owner)})
	default:
		r.WriteError(fmt.Sprintf("ERR unknown storage command %q with %d arguments", args[0], len(args)-1))
	}
}

// fence returns why a write is rejected, or "" to accept it.
func (s *Storage) fence(o *object, token int64, owner, expOwner string, expVersion int64) string {
	switch s.mode {
	case ModeMaxToken, ModeMaxTokenStrict, ModeMaxTokenWrite:
		if token < o.maxToken {
			return fmt.Sprintf("token %d < highest %d", token, o.maxToken)
		}
		if s.mode == ModeMaxTokenStrict && token == o.maxToken && o.maxOwner != "" && owner != o.maxOwner {
			return fmt.Sprintf("token %d repeated (held by %s)", token, o.maxOwner)
		}
	case ModeOwnerCAS:
		if expOwner != o.owner {
			return fmt.Sprintf("owner is %q, writer expected %q", o.owner, expOwner)
		}
	case ModeVersion:
		if expVersion != o.version {
			return fmt.Sprintf("version is %d, writer expected %d", o.version, expVersion)
		}
	}
	return ""
}
