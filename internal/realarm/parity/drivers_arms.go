package parity

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/locksim/locksim/internal/realarm/realredis"
)

// The drivers table's worlds and columns (drivers.go): which lock's world,
// which drivers a folder holds, which scenarios are its rows.

// Files of the drivers table, written into a parity folder (DriversFiles
// names those of a world other than DriverWorld).
const (
	DriversJSONFile  = "drivers.json"
	DriversTableFile = "drivers.txt"
)

// DriversFiles are the JSON and table files of world's drivers table:
// drivers.json and drivers.txt, or drivers-WORLD.json and .txt.
func DriversFiles(world string) (jsonFile, tableFile string) {
	if world == "" || world == DriverWorld {
		return DriversJSONFile, DriversTableFile
	}
	return "drivers-" + world + ".json", "drivers-" + world + ".txt"
}

// DriverWorld is the lock whose world the drivers run in by default
// (DriversOptions.World).
const DriverWorld = "set-nx-cad"

// RedlockWorld is the multi-node world: Redlock's five independent
// nodes, where only the drivers of a multi-node library run (node-redlock;
// the Python drivers refuse a world of several nodes at start).
const RedlockWorld = "redlock"

// FencingWorld is the fenced world: the fencing design's node and a
// storage that refuses a token lower than the highest it has seen, where
// only a driver whose acquire gives a token runs (python-fencing).
const FencingWorld = "fencing"

// Worlds are the worlds a drivers table can run in (--world).
var Worlds = []string{DriverWorld, RedlockWorld, FencingWorld}

// GoArm is the Go column of world's table: the lock whose world the
// drivers run in, on both arms.
func GoArm(world string) Arm {
	switch world {
	case FencingWorld:
		return Arm{Name: "go fencing", Library: "locks/catalogue fencing (go-redis)", Resembles: "-"}
	case RedlockWorld:
		return Arm{Name: "go redlock", Library: "locks/catalogue redlock (go-redis)", Resembles: "-"}
	}
	return Arm{Name: "go set-nx-cad", Library: "locks/catalogue set-nx-cad (go-redis)", Resembles: "-"}
}

// WorldScenarios are a world's default rows (DriverScenarios in
// set-nx-cad's).
func WorldScenarios(world string) []string {
	if world == FencingWorld {
		return []string{"pause-after-check", "delayed-write", "no-faults"}
	}
	if world == RedlockWorld {
		return []string{"pause-after-check", "pause-during-acquire", "clock-jump", "restart-no-persistence", "restart-fsync-always", "redlock-2-of-5", "no-faults"}
	}
	return DriverScenarios()
}

// Arm is one column of the drivers table: the Go lock (Driver "") or a
// driver folder.
type Arm struct {
	Name      string `json:"name"`
	Driver    string `json:"driver,omitempty"` // the folder under DriversOptions.Dir
	Library   string `json:"library"`
	Resembles string `json:"resembles"` // the Go designs it resembles
	// NoSentinel, if set, is why the driver refuses a Sentinel-managed
	// world (its replicated cells are then not run).
	NoSentinel string `json:"no_sentinel,omitempty"`
	// Expectations is the driver's expectations file ("": it has none,
	// and its cells have no expectation).
	Expectations string                 `json:"expectations,omitempty"`
	expect       map[string]Expectation // this world's, by scenario
	order        []string               // their scenarios in the file's order
}

// MaxDriverFolders bounds the entries DirArms reads in a drivers folder.
const MaxDriverFolders = 256

// DirArms are world's columns for the drivers in dir: the Go lock, then
// every sub-folder holding a driver* file or an expectations file
// (ExpectFileName), in name order. A driver with an expectations file is
// a column of the worlds it lists; one without, of set-nx-cad's only
// (with no expectations). Sub-folders with neither (drivers/scenarios)
// are not drivers; one whose driver does not resolve, or whose
// expectations file is bad, is an error naming it.
func DirArms(dir, world string) ([]Arm, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("drivers %s: %w", dir, err)
	}
	if len(ents) > MaxDriverFolders {
		return nil, fmt.Errorf("drivers %s: %d entries, more than the %d a drivers folder may hold", dir, len(ents), MaxDriverFolders)
	}
	arms := []Arm{GoArm(world)}
	found := 0
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		ef := filepath.Join(p, ExpectFileName)
		_, statErr := os.Stat(ef)
		hasExpect := statErr == nil
		if ms, _ := filepath.Glob(filepath.Join(p, "driver*")); len(ms) == 0 && !hasExpect {
			continue
		}
		found++
		if _, err := realredis.ResolveDriver(p); err != nil {
			return nil, err
		}
		if e.Name() == "go" || strings.ContainsAny(e.Name(), ", ") {
			return nil, fmt.Errorf("driver %s: a driver's folder name may not be \"go\" or hold a comma or space (--cells names arms by it)", p)
		}
		a := Arm{Name: e.Name(), Driver: e.Name(), Library: "-", Resembles: "-"}
		if hasExpect {
			f, err := LoadExpectFile(ef)
			if err != nil {
				return nil, err
			}
			ex, ok := f.Worlds[world]
			if !ok {
				continue
			}
			a.Library, a.Resembles, a.NoSentinel = orDash(f.Library), orDash(f.Resembles), f.NoSentinel
			a.Expectations, a.expect, a.order = ef, ex, f.Order[world]
		} else if world != DriverWorld {
			continue
		}
		arms = append(arms, a)
	}
	if len(arms) == 1 {
		return nil, fmt.Errorf("drivers %s: no driver for %s's world among its %d driver folders (want sub-folders each holding one executable driver* file; outside %s's world, an %s listing the world under expect:)", dir, world, found, DriverWorld, ExpectFileName)
	}
	return arms, nil
}

// rows are world's default rows, then any other scenario an arm's
// expectations name (in arm, then file, order).
func rows(world string, arms []Arm) []string {
	out := slices.Clone(WorldScenarios(world))
	for _, a := range arms {
		for _, sc := range a.order {
			if !slices.Contains(out, sc) {
				out = append(out, sc)
			}
		}
	}
	return out
}

// DriverScenarios are the table's rows. failover runs in primary-replica's
// world (cellLock), at ReplicatedTTL.
func DriverScenarios() []string {
	return []string{"pause-after-check", "pause-during-acquire", "slow-client-clocks", "clock-jump", "delayed-write", "restart-no-persistence", "failover", "no-faults", "foreign-release"}
}
