package charts

// Labels: time and duration formats, caption wrapping, and the slots that
// keep a lane's labels from overlapping.

import (
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot/vg"
)

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

func fmtSeconds(ns int64) string { return strconv.FormatFloat(seconds(ns), 'f', 3, 64) + "s" }

// fmtDur prints a duration with millisecond precision.
func fmtDur(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

// wrap splits s into lines of at most width runes, at spaces.
func wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, w := range strings.Fields(s) {
		if cur.Len() > 0 && len([]rune(cur.String()))+1+len([]rune(w)) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(w)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}

// labelSlots remembers where labels were written, per lane and level.
type labelSlots map[string][][2]vg.Length

func (l labelSlots) key(proc string, level int) string { return proc + "\x00" + strconv.Itoa(level) }

func (l labelSlots) overlaps(proc string, level int, x0, x1 vg.Length) bool {
	for _, iv := range l[l.key(proc, level)] {
		if x0 < iv[1]+vg.Points(2) && iv[0] < x1+vg.Points(2) {
			return true
		}
	}
	return false
}

func (l labelSlots) add(proc string, level int, x0, x1 vg.Length) {
	k := l.key(proc, level)
	l[k] = append(l[k], [2]vg.Length{x0, x1})
}
