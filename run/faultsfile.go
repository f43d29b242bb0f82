package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/scenarios"
)

// Bounds of a --faults file.
const (
	maxFaultsFile = 1 << 20 // bytes (1000 faults take about 200 KB)
	maxFaults     = 1000
)

// ReadFaults reads a --faults file: a JSON list of faults (unknown fields
// are errors). Only a regular file is read, and at most maxFaultsFile of it.
func ReadFaults(path string) ([]faults.Fault, error) {
	data, err := inputfile.Read(path, maxFaultsFile)
	if err != nil {
		var tl *inputfile.TooLargeError
		switch {
		case errors.As(err, &tl):
			return nil, fmt.Errorf("%s: %v of a faults file", path, err)
		case inputfile.NotRegular(err):
			return nil, fmt.Errorf("%q %v, not a faults file", path, err)
		}
		return nil, fmt.Errorf("cannot read %q: %v", path, err)
	}
	return ParseFaults(path, data)
}

// ParseFaults decodes a --faults file's bytes (name names it in errors).
// The list is decoded one fault at a time, so that a file of a million
// faults stops at the first one over the bound instead of holding them all.
func ParseFaults(name string, data []byte) ([]faults.Fault, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: not a JSON list of faults: %v", name, err)
	}
	var fs []faults.Fault
	switch tok {
	case nil: // null
	case json.Delim('['):
		fs = []faults.Fault{}
		for dec.More() {
			if len(fs) == maxFaults {
				return nil, fmt.Errorf("%s: more than %d faults", name, maxFaults)
			}
			var f faults.Fault
			if err := dec.Decode(&f); err != nil {
				return nil, fmt.Errorf("%s: not a JSON list of faults: %v (faults[%d])", name, err, len(fs))
			}
			fs = append(fs, f)
		}
		if _, err := dec.Token(); err != nil {
			return nil, fmt.Errorf("%s: not a JSON list of faults: %v", name, err)
		}
	default:
		return nil, fmt.Errorf("%s: not a JSON list of faults: it starts with %q", name, fmt.Sprint(tok))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: trailing data after the list of faults", name)
	}
	if fs == nil {
		// [] is no faults; null ran the scenario's own schedule.
		return nil, fmt.Errorf("%s: null is not a list of faults (write [] for none)", name)
	}
	// The bounds a scenario file's faults have.
	for i, f := range fs {
		if field, err := scenarios.CheckFault(f); err != nil {
			where := fmt.Sprintf("faults[%d]", i)
			if field != "" {
				where += "." + field
			}
			return nil, fmt.Errorf("%s: %s: %v", name, where, err)
		}
	}
	return fs, nil
}
