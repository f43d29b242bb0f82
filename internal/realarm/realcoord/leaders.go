package realcoord

// Leaders is every member up now that says it leads (more than one
// while a cut-off leader has not yet stepped down, or none during an
// election). It asks each member in turn, bounded by a second each.
func (e *Ensemble) Leaders() []int {
	var out []int
	for i, m := range e.Members {
		if e.isLeader(m) {
			out = append(out, i)
		}
	}
	return out
}
