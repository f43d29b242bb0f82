package main

import (
	"os"
	"runtime/pprof"
)

// startProfile starts a CPU profile of this process into path (""
// nothing) and returns what stops it and closes the file. It is the
// report's hidden --cpuprofile: where the report's own time goes (the
// store, planning, charts, pages), its workers' runs apart.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, usageErrorf("--cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, usageErrorf("--cpuprofile: %v", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
