package run

import (
	"runtime"
	"strings"
	"testing"
)

// hostileFaults are --faults files at the size limit shaped to make the
// decoder hold much: many faults (the bound is checked as they are read),
// one fault with a long list, long strings.
func hostileFaults(size int) []struct{ name, src, want string } {
	fill := func(prefix, unit, suffix string) string {
		return prefix + strings.Repeat(unit, (size-len(prefix)-len(suffix))/len(unit)) + suffix
	}
	return []struct{ name, src, want string }{
		{"many empty faults", fill("[", "{},", "{}]"), "more than 1000 faults"},
		{"many nulls", fill("[", "null,", "null]"), "more than 1000 faults"},
		{"long targets", fill(`[{"kind":"crash","start":1000000000,"duration":1000000000,"targets":[`, `"a",`, `"a"]}]`), ""},
		{"long kind", fill(`[{"kind":"`, "x", `"}]`), `unknown fault kind "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…" (one of client-pause`},
		{"deep", fill("[", "[", ""), "not a JSON list of faults"},
	}
}

// TestParseFaultsHostile: each hostile file gets its error (or decodes)
// allocating at most 100 MB (before, a list of a million empty
// faults was decoded whole before its length was checked).
func TestParseFaultsHostile(t *testing.T) {
	size := maxFaultsFile
	if testing.Short() {
		size /= 4
	}
	for _, c := range hostileFaults(size) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ParseFaults("f.json", []byte(c.src))
		runtime.ReadMemStats(&after)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if mb := (after.TotalAlloc - before.TotalAlloc) >> 20; mb > 100 {
			t.Errorf("%s: %d bytes allocated %d MB, more than 100", c.name, len(c.src), mb)
		}
	}
}

// BenchmarkParseFaultsWorst: the hostile --faults files at the size limit.
//
//	go test -run '^$' -bench ParseFaultsWorst -benchtime 3x ./run/
func BenchmarkParseFaultsWorst(b *testing.B) {
	for _, c := range hostileFaults(maxFaultsFile) {
		b.Run(strings.ReplaceAll(c.name, " ", "-"), func(b *testing.B) {
			data := []byte(c.src)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				ParseFaults("f.json", data)
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/(1<<20), "MB/op")
		})
	}
}
