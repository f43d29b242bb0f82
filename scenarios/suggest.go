package scenarios

import (
	"reflect"
	"slices"
	"strings"
)

// Closest is the name among known that name most likely misspells: the
// same but for case, or at most two edits away (the closest, the first of
// equals), or a known name that name abbreviates; "" if none.
func Closest(name string, known []string) string {
	lower := strings.ToLower(name)
	best, bestD := "", 3
	for _, k := range known {
		kl := strings.ToLower(k)
		if kl == lower {
			return k
		}
		if d := editDistance(lower, kl); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" && len(lower) >= 3 {
		for _, k := range known {
			if strings.HasPrefix(strings.ToLower(k), lower) {
				return k
			}
		}
	}
	return best
}

// DidYouMean is `did you mean "x"? ` for Closest's answer, "" for none.
func DidYouMean(name string, known []string) string {
	if c := Closest(name, known); c != "" && c != name {
		return `did you mean "` + c + `"? `
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fieldSynonyms are words a user may write for a scenario file's field
// that no spelling distance finds.
var fieldSynonyms = map[string]string{"param": "name", "parameter": "name", "kind_of": "kind", "target": "targets", "lock": "locks"}

// unknownFieldHint is a did-you-mean for an unknown field at path (as
// "sweep.param"): the field of the enclosing mapping it likely misspells;
// "" when there is none.
func unknownFieldHint(path string) string {
	parts := strings.Split(path, ".")
	t := reflect.TypeOf(File{})
	for _, p := range parts[:len(parts)-1] {
		if i := strings.IndexByte(p, '['); i >= 0 {
			p = p[:i]
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Map {
			t = t.Elem()
			continue
		}
		if t.Kind() != reflect.Struct {
			return ""
		}
		f, ok := fieldByTag(t, p)
		if !ok {
			return ""
		}
		t = f.Type
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			if name := strings.Split(f.Tag.Get("yaml"), ",")[0]; name != "" && name != "-" {
				names = append(names, name)
			}
		}
	}
	key := parts[len(parts)-1]
	if s, ok := fieldSynonyms[key]; ok && slices.Contains(names, s) {
		return `did you mean "` + s + `"?`
	}
	if d := DidYouMean(key, names); d != "" {
		return strings.TrimSpace(d)
	}
	return ""
}
