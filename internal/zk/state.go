// Package zk is a coordination service for the simulator: ZooKeeper's data
// model reduced to what the lock recipe needs (sessions with a timeout,
// ephemeral sequential nodes that die with their session, a creation
// revision per node), replicated by etcd raft (go.etcd.io/raft/v3) across
// members that are simulated service processes (sim.Member). Clients speak
// RESP to any member through go-redis Do:
//
//	ZK.SESSION timeout-ms           -> session id
//	ZK.HEARTBEAT session            -> 1, or -SESSIONEXPIRED
//	ZK.CREATE parent session tag    -> [name, czxid] (ephemeral sequential; the same tag returns the same node, or -GONE once it was deleted)
//	ZK.CHILDREN parent              -> [names, oldest first]
//	ZK.EXISTS name                  -> czxid, or 0
//	ZK.DELETE name                  -> 1, or 0
//
// Every command, reads included, goes through the raft log and is answered
// when it applies on the member that took it (linearizable; no stale read
// from a deposed leader). A member that knows no leader answers
// -NOTLEADER, and the client tries another.
package zk

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/locksim/locksim/sim"
)

// State is the replicated state machine: it changes only by applying log
// entries, in log order, so every member that applied the same prefix
// holds the same State.
type State struct {
	sessions map[int64]*session
	dirs     map[string]*dir
	// lastSeen is volatile: the monotonic time each session was last heard of
	// on this member (the leader expires sessions by it).
	lastSeen map[int64]int64
}

type session struct {
	timeout int64 // ns
	// tags are the create tags this session used: a create with a tag
	// whose node was deleted is a late retry (a request a partition or a
	// paused member held back), and must not make a node nobody owns.
	tags map[string]bool
}

type dir struct {
	seq      int64
	children map[string]*znode
}

type znode struct {
	session int64
	tag     string
	czxid   int64
}

// NewState returns an empty store.
func NewState() *State {
	return &State{sessions: map[int64]*session{}, dirs: map[string]*dir{}, lastSeen: map[int64]int64{}}
}

// op is one log entry's command.
type op struct {
	req  string // the proposing member's request id ("" for none)
	name string
	args []string
}

const sep = "\x1f"

func (o op) encode() []byte {
	return []byte(strings.Join(append([]string{o.req, o.name}, o.args...), sep))
}

func decode(b []byte) (op, bool) {
	f := strings.Split(string(b), sep)
	if len(f) < 2 {
		return op{}, false
	}
	return op{req: f[0], name: f[1], args: f[2:]}, true
}

// Errors a client sees.
const (
	ErrSessionExpired = "SESSIONEXPIRED session expired or unknown"
	ErrNotLeader      = "NOTLEADER no leader known; try another member"
	ErrGone           = "GONE the node this tag created was deleted"
)

// apply runs one entry at log index idx (the zxid) at local time now and
// returns how to answer it.
func (s *State) apply(idx uint64, o op, now int64) func(sim.Reply) {
	zxid := int64(idx)
	argInt := func(i int) (int64, bool) {
		if i >= len(o.args) {
			return 0, false
		}
		v, err := strconv.ParseInt(o.args[i], 10, 64)
		return v, err == nil
	}
	bad := func(r sim.Reply) { r.WriteError("ERR wrong arguments for " + o.name) }
	alive := func(sid int64) bool {
		if _, ok := s.sessions[sid]; ok {
			s.lastSeen[sid] = now
			return true
		}
		return false
	}
	switch o.name {
	case "SESSION":
		t, ok := argInt(0)
		if !ok || t <= 0 {
			return bad
		}
		s.sessions[zxid] = &session{timeout: t * 1e6, tags: map[string]bool{}}
		s.lastSeen[zxid] = now
		return func(r sim.Reply) { r.WriteInt(int(zxid)) }
	case "HEARTBEAT":
		sid, ok := argInt(0)
		if !ok {
			return bad
		}
		if !alive(sid) {
			return func(r sim.Reply) { r.WriteError(ErrSessionExpired) }
		}
		return func(r sim.Reply) { r.WriteInt(1) }
	case "EXPIRE":
		sid, ok := argInt(0)
		if ok {
			s.expire(sid)
		}
		return func(r sim.Reply) { r.WriteOK() }
	case "CREATE":
		sid, ok := argInt(1)
		if !ok || len(o.args) != 3 {
			return bad
		}
		if !alive(sid) {
			return func(r sim.Reply) { r.WriteError(ErrSessionExpired) }
		}
		parent, tag := o.args[0], o.args[2]
		d := s.dirs[parent]
		if d == nil {
			d = &dir{children: map[string]*znode{}}
			s.dirs[parent] = d
		}
		for _, name := range d.sorted() { // a retried create finds its node
			if z := d.children[name]; z.session == sid && z.tag == tag {
				return createReply(parent+"/"+name, z.czxid)
			}
		}
		if s.sessions[sid].tags[tag] {
			return func(r sim.Reply) { r.WriteError(ErrGone) }
		}
		s.sessions[sid].tags[tag] = true
		d.seq++
		name := fmt.Sprintf("lock-%010d", d.seq)
		d.children[name] = &znode{session: sid, tag: tag, czxid: zxid}
		return createReply(parent+"/"+name, zxid)
	case "CHILDREN":
		if len(o.args) != 1 {
			return bad
		}
		var names []string
		if d := s.dirs[o.args[0]]; d != nil {
			names = d.sorted()
		}
		return func(r sim.Reply) {
			r.WriteLen(len(names))
			for _, n := range names {
				r.WriteBulk(n)
			}
		}
	case "EXISTS", "DELETE":
		if len(o.args) != 1 {
			return bad
		}
		d, name := s.lookup(o.args[0])
		var z *znode
		if d != nil {
			z = d.children[name]
		}
		if z == nil {
			return func(r sim.Reply) { r.WriteInt(0) }
		}
		if o.name == "DELETE" {
			delete(d.children, name)
			return func(r sim.Reply) { r.WriteInt(1) }
		}
		czxid := z.czxid
		return func(r sim.Reply) { r.WriteInt(int(czxid)) }
	}
	return func(r sim.Reply) { r.WriteError("ERR unknown command " + o.name) }
}

func createReply(path string, czxid int64) func(sim.Reply) {
	return func(r sim.Reply) {
		r.WriteLen(2)
		r.WriteBulk(path)
		r.WriteInt(int(czxid))
	}
}

// expire ends session sid: its ephemeral nodes go with it.
func (s *State) expire(sid int64) {
	delete(s.sessions, sid)
	delete(s.lastSeen, sid)
	for _, d := range s.dirs {
		for name, z := range d.children {
			if z.session == sid {
				delete(d.children, name)
			}
		}
	}
}

func (s *State) lookup(path string) (*dir, string) {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return nil, ""
	}
	return s.dirs[path[:i]], path[i+1:]
}

func (d *dir) sorted() []string {
	names := make([]string, 0, len(d.children))
	for n := range d.children {
		names = append(names, n)
	}
	sort.Strings(names) // zero-padded sequence numbers: oldest first
	return names
}

// Sessions lists the live session ids, ascending.
func (s *State) Sessions() []int64 {
	ids := make([]int64, 0, len(s.sessions))
	for id := range s.sessions {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Children lists parent's children, oldest first.
func (s *State) Children(parent string) []string {
	if d := s.dirs[parent]; d != nil {
		return d.sorted()
	}
	return nil
}

// snapshot is a State as a raft snapshot carries it (JSON: map keys come
// out sorted, so equal states encode to equal bytes).
type snapshot struct {
	Sessions map[int64]snapSession `json:"sessions"`
	Dirs     map[string]snapDir    `json:"dirs"`
}

type snapSession struct {
	Timeout int64           `json:"timeout"`
	Tags    map[string]bool `json:"tags"`
}

type snapDir struct {
	Seq      int64                `json:"seq"`
	Children map[string]snapZnode `json:"children"`
}

type snapZnode struct {
	Session int64  `json:"session"`
	Tag     string `json:"tag"`
	Czxid   int64  `json:"czxid"`
}

// encode is the replicated part of s (lastSeen is each member's own).
func (s *State) encode() []byte {
	out := snapshot{Sessions: map[int64]snapSession{}, Dirs: map[string]snapDir{}}
	for id, se := range s.sessions {
		out.Sessions[id] = snapSession{Timeout: se.timeout, Tags: se.tags}
	}
	for p, d := range s.dirs {
		sd := snapDir{Seq: d.seq, Children: map[string]snapZnode{}}
		for n, z := range d.children {
			sd.Children[n] = snapZnode{Session: z.session, Tag: z.tag, Czxid: z.czxid}
		}
		out.Dirs[p] = sd
	}
	b, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	return b
}

// decodeState restores a State from a snapshot's data; every session is
// taken as heard of at now.
func decodeState(b []byte, now int64) (*State, error) {
	var in snapshot
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	s := NewState()
	for id, se := range in.Sessions {
		tags := se.Tags
		if tags == nil {
			tags = map[string]bool{}
		}
		s.sessions[id] = &session{timeout: se.Timeout, tags: tags}
		s.lastSeen[id] = now
	}
	for p, sd := range in.Dirs {
		d := &dir{seq: sd.Seq, children: map[string]*znode{}}
		for n, z := range sd.Children {
			d.children[n] = &znode{session: z.Session, tag: z.Tag, czxid: z.Czxid}
		}
		s.dirs[p] = d
	}
	return s, nil
}
