package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

// keyInput is what a run's key hashes, in canonical JSON (Go's encoder:
// struct fields in declaration order, map keys sorted).
type keyInput struct {
	Format int    `json:"format"`
	Build  string `json:"build"`
	// Lock is the SHA-256 of the spec's lock's own design files
	// (Ident.Lock; "" when its code is all in Build).
	Lock string `json:"lock,omitempty"`
	// ScenarioFile is the SHA-256 of the scenario file's bytes: the file
	// the spec names, or the built-in's file (Ident.Scenario; "" when the
	// build is named by its executable, which holds it).
	ScenarioFile string   `json:"scenario_file,omitempty"`
	Spec         run.Spec `json:"spec"`
	// Kind tells a run's outcome from other entries of the same run (a
	// drawn timeline: "timeline" and its title and caption).
	Kind string `json:"kind"`
}

// RunKey is the key of one run's entry of the given kind in the build
// id names: a SHA-256 over the build's parts the run can reach (Build,
// the lock's own files, the scenario's file) and the spec. kind tells
// apart entries of the same run ("outcome"; a timeline with its title and
// caption).
func RunKey(id *Ident, spec run.Spec, kind string) (string, error) {
	in := keyInput{Format: 2, Build: id.Build, Lock: id.Lock(spec.Lock), Spec: spec, Kind: kind}
	if sc, err := scenarios.Get(spec.ScenarioID()); err == nil {
		if sc.File == nil {
			// A built-in file that did not parse or validate in this
			// build (its validation reads the locks it names, whose files
			// may be keyed apart): never answered from the store.
			return "", fmt.Errorf("built-in scenario %s is broken in this build: %s", sc.ID, sc.Description)
		}
		in.ScenarioFile, _ = id.Scenario(spec.ScenarioID())
	} else {
		data, err := inputfile.Read(spec.Scenario, scenarios.MaxFileBytes)
		if err != nil {
			return "", err
		}
		h := sha256.Sum256(data)
		in.ScenarioFile = hex.EncodeToString(h[:])
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// ContentKey is the key of an entry that is not a run's: something the
// report makes from content (a chart drawn from its numbers), named by
// kind and by content, all the inputs the made thing depends on, in this
// build (its code is in Build).
func ContentKey(id *Ident, kind string, content []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "locksim-content 1\x00%s\x00%s\x00%d\x00", id.Build, kind, len(content))
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}
