package locksim_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureMapMatchesPackages: docs/ARCHITECTURE.md's package
// table names every package of the module (go list ./...) and no package
// that is gone, so the map a reader starts from is the code's.
func TestArchitectureMapMatchesPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	const module = "github.com/locksim/locksim"
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		p = strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		if p == "" {
			p = "locksim" // the module root, named so in the table
		}
		pkgs = append(pkgs, p)
	}
	doc, err := os.ReadFile("docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## The packages\n")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "## The packages" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([^`]+)`")
	var mapped []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		mapped = append(mapped, strings.TrimSuffix(m[1], "/"))
	}
	for _, p := range pkgs {
		if !slices.Contains(mapped, p) {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md's package table", p)
		}
	}
	for _, m := range mapped {
		if slices.Contains(pkgs, m) {
			continue
		}
		if fi, err := os.Stat(m); err == nil && fi.IsDir() {
			continue // a folder that is not a package of this module (drivers/, examples/userlock)
		}
		t.Errorf("docs/ARCHITECTURE.md's package table names %s, which is neither a package (go list ./...) nor a folder", m)
	}
}
