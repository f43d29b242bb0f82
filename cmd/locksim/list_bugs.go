package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/knownbugs"
)

func newListBugsCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "bugs [ID]",
		Short: "List the known bugs of lock libraries: id, library@version, buggy vs fixed",
		Long: `List the known-bugs suite (knownbugs/README.md): bugs filed against the
lock libraries people run, and those locksim found, a line each: the id,
the outcome (the verdict's count on the buggy version, and on the fixed
one or its twin; or why it was not reproduced), and library@buggy version.
Reproduced ones first. With an ID: that bug in full, with its link, the
mechanism, how locksim finds it and the command that reproduces it.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				if _, err := knownbugs.All(); err != nil {
					return &codeError{code: exitInternal, err: err}
				}
				b, err := knownbugs.Get(args[0])
				if err != nil {
					return usageErrorf("list bugs: %v", err)
				}
				return bugDetails(stdout, b)
			}
			all, err := knownbugs.All()
			if err != nil {
				// The entries are compiled in: one that does not decode is
				// this binary's bug, not the user's input.
				return &codeError{code: exitInternal, err: err}
			}
			var rows [][]string
			n := 0
			for _, b := range all {
				if b.Reproduced() {
					n++
				}
				rows = append(rows, []string{b.ID, b.Outcome(), b.Library + "@" + b.Buggy})
			}
			if err := writeRows(stdout, rows, []int{0, 34, 0}); err != nil {
				return err
			}
			_, err = fmt.Fprintf(stdout, "%d of %d reproduced; 'locksim list bugs ID' for one in full\n", n, len(all))
			return err
		},
	}
}

// bugDetails prints one known bug in full ('list bugs ID').
func bugDetails(w io.Writer, b knownbugs.Bug) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, v string) {
		if strings.TrimSpace(v) != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, oneLine(v))
		}
	}
	row("id", b.ID)
	row("library", b.Library+" ("+b.Language+", "+b.Package+")")
	row("buggy", b.Buggy)
	row("fixed", b.Fixed)
	row("twin", b.Twin)
	row("tracker", b.Tracker)
	row("mechanism", b.Mechanism)
	row("faults", strings.Join(b.Faults, "; "))
	row("status", b.Status)
	row("why not", b.WhyNot)
	if b.Reproduced() {
		row("verdict", b.Verdict)
		how := b.FoundBy
		if b.FoundByWhy != "" {
			how += " (" + b.FoundByWhy + ")"
		}
		row("found by", how)
		m := b.Measured
		row("buggy side", b.Buggy+": "+m.Buggy.String())
		row("safe side", b.SafeSide()+": "+m.Fixed.String())
		row("measured", m.Date+": "+m.Command)
		row("traces", strings.Join(m.Traces, " "))
		row("repro", b.Repro)
		quick := "no"
		if b.Quick {
			quick = "yes (rerun by .ci/run)"
		}
		row("quick", quick)
	}
	row("notes", b.Notes)
	return tw.Flush()
}
