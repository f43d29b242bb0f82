package locksim_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The docs are a house plan: every relative link and every #anchor in
// README.md and docs/*.md must lead to a file of the repository and a
// heading in it. External links (http, https, mailto) are not followed.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{"README.md"}, files...)
	links, broken := checkDocLinks(".", files)
	t.Logf("%d relative links in %d files", links, len(files))
	for _, b := range broken {
		t.Error(b)
	}
	if links < 50 {
		t.Errorf("found %d relative links in %d files: the link scanner is missing links", links, len(files))
	}
}

// TestDocLinksCatchBreakage proves the check can fail: a missing file, a
// missing heading in another file and in the same file, an anchor on a
// file that has no headings, and a link out of the repository are all
// reported, while good links and links inside code are not.
func TestDocLinksCatchBreakage(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A page\n\n## What `run`'s summary means\n\n## Twice\n\n## Twice\n\n```sh\n# not a heading\n```\n")
	write("docs/img/x.png", "png")
	write("README.md", strings.Join([]string{
		"# Top",
		"[ok](docs/a.md) [ok](docs/a.md#a-page) [ok](docs/a.md#what-runs-summary-means)",
		"[ok](docs/a.md#twice-1) ![ok](docs/img/x.png) [ok](#top) [ok](https://example.com/#x)",
		"`[in code](nowhere.md)`",
		"```",
		"[in a block](nowhere.md)",
		"```",
		"[bad file](docs/nowhere.md)",
		"[bad anchor](docs/a.md#no-such-heading)",
		"[bad local](#nowhere)",
		"[bad code heading](docs/a.md#not-a-heading)",
		"[bad anchor on a picture](docs/img/x.png#y)",
		"[bad outside](../outside.md)",
	}, "\n"))
	links, broken := checkDocLinks(dir, []string{"README.md", "docs/a.md"})
	if links != 12 {
		t.Errorf("found %d links, want 12 (6 good, 6 broken)", links)
	}
	want := []string{"docs/nowhere.md", "#no-such-heading", "#nowhere", "#not-a-heading", "x.png#y", "../outside.md"}
	if len(broken) != len(want) {
		t.Errorf("reported %d broken links, want %d:\n%s", len(broken), len(want), strings.Join(broken, "\n"))
	}
	for _, w := range want {
		if !slices.ContainsFunc(broken, func(b string) bool { return strings.Contains(b, w) }) {
			t.Errorf("the broken link %q was not reported; reported:\n%s", w, strings.Join(broken, "\n"))
		}
	}
}

var (
	// mdLink matches an inline link or image: [text](target) or
	// ![alt](target), the target up to a space (a title) or ")".
	mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan matches inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`[^`]*`")
)

// checkDocLinks reads the markdown files (paths relative to root) and
// returns how many relative links they hold and one line for each that
// does not resolve.
func checkDocLinks(root string, files []string) (links int, broken []string) {
	anchors := map[string]map[string]bool{} // file (relative to root) → its heading slugs
	slugsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return nil, err
		}
		a := headingSlugs(string(b))
		anchors[rel] = a
		return a, nil
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			broken = append(broken, fmt.Sprintf("%s: %v", f, err))
			continue
		}
		for i, line := range proseLines(string(b)) {
			if line == "" {
				continue
			}
			line = codeSpan.ReplaceAllString(line, "")
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				where := fmt.Sprintf("%s:%d: %s", f, i+1, target)
				path, anchor, _ := strings.Cut(target, "#")
				rel := f
				if path != "" {
					rel = filepath.Clean(filepath.Join(filepath.Dir(f), path))
					if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(path) {
						broken = append(broken, where+": leads out of the repository")
						continue
					}
					if _, err := os.Stat(filepath.Join(root, rel)); err != nil {
						broken = append(broken, where+": no such file")
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(rel, ".md") {
					broken = append(broken, where+": an anchor on a file that is not markdown")
					continue
				}
				slugs, err := slugsOf(rel)
				if err != nil {
					broken = append(broken, fmt.Sprintf("%s: %v", where, err))
					continue
				}
				if !slugs[anchor] {
					broken = append(broken, fmt.Sprintf("%s: %s has no heading #%s", where, rel, anchor))
				}
			}
		}
	}
	return links, broken
}

// proseLines returns the file's lines with those inside fenced code blocks
// blanked (kept as "" so line numbers stay right).
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			lines[i] = ""
			continue
		}
		if in {
			lines[i] = ""
		}
	}
	return lines
}

// headingSlugs returns the anchors GitHub gives the file's headings:
// the text lower-cased, markup and punctuation dropped, spaces turned to
// hyphens, and a repeated slug numbered -1, -2, ...
func headingSlugs(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(text) {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimLeft(l, "#")
		if len(l)-len(h) > 6 || !strings.HasPrefix(h, " ") {
			continue
		}
		h = mdLink.ReplaceAllStringFunc(strings.TrimSpace(h), func(s string) string {
			return s[strings.Index(s, "[")+1 : strings.Index(s, "]")]
		})
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			out[fmt.Sprintf("%s-%d", slug, n)] = true
		} else {
			out[slug] = true
		}
		seen[slug]++
	}
	return out
}
