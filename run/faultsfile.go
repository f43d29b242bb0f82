package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/locksim/locksim/faults"
	"github.com/locksim/locksim/scenarios"
)

// maxFaultsFile bounds the size of a --faults file.
const maxFaultsFile = 16 << 20

// ReadFaults reads a --faults file: a JSON list of faults (unknown fields are errors).
func ReadFaults(path string) ([]faults.Fault, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %q: %v", path, UnwrapPathError(err))
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%q is a directory", path)
	}
	if st.Size() > maxFaultsFile {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", path, st.Size(), maxFaultsFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read %q: %v", path, UnwrapPathError(err))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var fs []faults.Fault
	if err := dec.Decode(&fs); err != nil {
		return nil, fmt.Errorf("%s: not a JSON list of faults: %v", path, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the list of faults", path)
	}
	if fs == nil {
		// [] is no faults; null ran the scenario's own schedule.
		return nil, fmt.Errorf("%s: null is not a list of faults (write [] for none)", path)
	}
	if len(fs) > 1000 {
		return nil, fmt.Errorf("%s: %d faults, at most 1000", path, len(fs))
	}
	// The bounds a scenario file's faults have.
	for i, f := range fs {
		if field, err := scenarios.CheckFault(f); err != nil {
			where := fmt.Sprintf("faults[%d]", i)
			if field != "" {
				where += "." + field
			}
			return nil, fmt.Errorf("%s: %s: %v", path, where, err)
		}
	}
	return fs, nil
}
