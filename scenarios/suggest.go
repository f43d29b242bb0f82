package scenarios

import "strings"

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
