package store

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"

	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/run"
	"github.com/locksim/locksim/scenarios"
)

var build struct {
	once sync.Once
	id   string
	how  string
	err  error
}

// BuildID names this build of locksim and how it was told: the SHA-256 of
// the build information (module versions and sums, Go version, build
// settings, vcs.revision) when the binary was built from a clean checkout
// (vcs.modified=false) and no dependency is replaced by a local directory;
// otherwise the SHA-256 of the executable file
// itself, which changes with any change to the code. When in doubt, the
// key changes and runs are rerun.
func BuildID() (id, how string, err error) {
	build.once.Do(func() {
		if bi, ok := debug.ReadBuildInfo(); ok {
			var rev, modified string
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					rev = s.Value
				case "vcs.modified":
					modified = s.Value
				}
			}
			local := false // a dependency replaced by a local directory: its code is not named by any sum
			for _, d := range bi.Deps {
				if d.Replace != nil && d.Replace.Sum == "" {
					local = true
				}
			}
			if rev != "" && modified == "false" && !local {
				h := sha256.Sum256([]byte(bi.String()))
				build.id, build.how = hex.EncodeToString(h[:]), "vcs.revision "+rev
				return
			}
		}
		exe, err := os.Executable()
		if err != nil {
			build.err = fmt.Errorf("result store: cannot name this build: %v", err)
			return
		}
		f, err := os.Open(exe)
		if err != nil {
			build.err = fmt.Errorf("result store: cannot name this build: %v", err)
			return
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			build.err = fmt.Errorf("result store: cannot name this build: %v", err)
			return
		}
		build.id, build.how = hex.EncodeToString(h.Sum(nil)), "the executable's SHA-256"
	})
	return build.id, build.how, build.err
}

// keyInput is what a run's key hashes, in canonical JSON (Go's encoder:
// struct fields in declaration order, map keys sorted).
type keyInput struct {
	Format int    `json:"format"`
	Build  string `json:"build"`
	// ScenarioFile is the SHA-256 of the scenario file's bytes when the
	// spec names a file (a built-in's bytes are in the build).
	ScenarioFile string   `json:"scenario_file,omitempty"`
	Spec         run.Spec `json:"spec"`
	// Kind tells a run's outcome from other entries of the same run (a
	// drawn timeline: "timeline" and its title and caption).
	Kind string `json:"kind"`
}

// RunKey is the key of one run's entry of the given kind in build: a
// SHA-256 over the build, the scenario file's bytes (when the spec names
// a file rather than a built-in) and the spec. kind tells apart entries of
// the same run ("outcome"; a timeline with its title and caption).
func RunKey(build string, spec run.Spec, kind string) (string, error) {
	in := keyInput{Format: 1, Build: build, Spec: spec, Kind: kind}
	if _, err := scenarios.Get(spec.ScenarioID()); err != nil {
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
