package reports

import (
	"html"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rowsDefined fails t for each debate row ("S14") a rendered page of the
// report in dir names that the index's glossary does not define: a cold
// reader met S14 on a page whose glossary listed S1–S8 only.
func rowsDefined(t *testing.T, dir string) {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<dt id="g-rows">.*?</dt><dd>(.*?)</dd>`).FindSubmatch(index)
	if m == nil {
		t.Fatal("the index's glossary has no entry for the debate's rows (g-rows)")
	}
	defined := html.UnescapeString(string(m[1]))
	tags, row := regexp.MustCompile(`<[^>]*>`), regexp.MustCompile(`\bS\d+\b`)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".html" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := html.UnescapeString(tags.ReplaceAllString(string(b), " "))
		for _, tok := range row.FindAllString(text, -1) {
			if !strings.Contains(defined, tok+": ") {
				rel, _ := filepath.Rel(dir, path)
				t.Errorf("%s names %s, which the glossary's rows do not define: %s", rel, tok, defined)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRowsTerm: the rows' short name collapses runs of three or more.
func TestRowsTerm(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"S1", "S2", "S3", "S4", "S5", "S6", "S7", "S8", "S14"}, "S1–S8, S14"},
		{[]string{"S1", "S2", "S4"}, "S1, S2, S4"},
		{nil, ""},
	} {
		if got := rowsTerm(c.in); got != c.want {
			t.Errorf("rowsTerm(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
