package sweep

import "strings"

// An InputError is a sweep the user asked for that cannot run (a bad
// parameter, a folder holding another sweep): the user's mistake, not a
// failure of the run; package reports uses it too. Field names what to
// correct ("out", "scenario", "param", "locks", "seeds", "shard",
// "first-seed"; "scenarios" for a report) or is "" (the whole).
type InputError struct {
	Field string
	Err   error
}

func (e *InputError) Error() string {
	msg := e.Err.Error()
	if e.Field == "" || strings.HasPrefix(msg, e.Field+":") {
		return msg
	}
	return e.Field + ": " + msg
}

func (e *InputError) Unwrap() error { return e.Err }
