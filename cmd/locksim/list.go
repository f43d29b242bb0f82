package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/locks"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/scenarios"
)

func newListCmd(stdout io.Writer) *cobra.Command {
	list := &cobra.Command{
		Use:   "list locks|scenarios|bugs [ID]",
		Short: "List the lock designs, the built-in scenarios or the known bugs",
		Long: fmt.Sprintf(`List the lock designs or the built-in scenarios, one per line of at most %d
columns: the id, then (for locks) the source and the known weakness, or (for
scenarios) what it does, cut short with "…" where they do not fit. The id is
always the first field. 'list locks ID' and 'list scenarios ID' print one
in full.`, listWidth),
		// Runnable, so that "list foo" is an error rather than the help.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageErrorf("list: unknown list %q (one of: locks, scenarios, bugs)", args[0])
		},
	}
	canaries := false
	listLocks := &cobra.Command{
		Use:   "locks [ID]",
		Short: "List the lock designs: id, source, known weakness",
		Long: `List the lock designs: id, source, known weakness, a line each. Canaries
(locks broken on purpose, which prove the checkers can fail) are left out
unless --canaries. With an ID: that lock in full.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				info, err := catalogue.Get(args[0])
				if err != nil {
					return usageErrorf("list locks: %v", err)
				}
				return lockDetails(stdout, info)
			}
			var rows [][]string
			for _, id := range catalogue.AllIDs() {
				info, _ := catalogue.Get(id)
				if info.Canary && !canaries {
					continue
				}
				weak := oneLine(info.Weakness)
				if info.Unavailable != "" {
					weak = "[unavailable] " + weak
				}
				if info.RealOnly != "" {
					weak = "[real arm only] " + weak
				}
				rows = append(rows, []string{id, oneLine(info.Source), weak})
			}
			return writeRows(stdout, rows, []int{0, 34, 0})
		},
	}
	listLocks.Flags().BoolVar(&canaries, "canaries", false, "also list the canaries (locks broken on purpose)")
	list.AddCommand(listLocks)
	list.AddCommand(&cobra.Command{
		Use:   "scenarios [ID]",
		Short: "List the built-in scenarios: id, description",
		Long:  `List the built-in scenarios: id and description, a line each. With an ID: that scenario in full.`,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 1 {
				s, err := scenarios.Get(args[0])
				if err != nil {
					return usageErrorf("list scenarios: %v", err)
				}
				fmt.Fprintf(stdout, "id:           %s\ndescription:  %s\n", s.ID, oneLine(s.Description))
				if s.File != nil && s.File.Source != "" {
					fmt.Fprintf(stdout, "source:       %s\n", oneLine(s.File.Source))
				}
				return nil
			}
			var rows [][]string
			for _, id := range scenarios.IDs() {
				s, _ := scenarios.Get(id)
				rows = append(rows, []string{id, oneLine(s.Description)})
			}
			return writeRows(stdout, rows, []int{0, 0})
		},
	})
	list.AddCommand(newListBugsCmd(stdout))
	return list
}

// listWidth is the widest line 'list' prints (a 100-column terminal).
const listWidth = 100

// writeRows prints rows as aligned columns two spaces apart, each line at
// most listWidth runes: the first column whole, a column with a cap in
// caps (0: none) clipped to it, the last one clipped to what is left.
func writeRows(w io.Writer, rows [][]string, caps []int) error {
	widths := make([]int, len(caps))
	for _, r := range rows {
		for i, c := range r[:len(r)-1] {
			n := len([]rune(c))
			if caps[i] > 0 {
				n = min(n, caps[i])
			}
			widths[i] = max(widths[i], n)
		}
	}
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			last := i == len(r)-1
			room := widths[i]
			if last {
				room = listWidth - len([]rune(b.String()))
			}
			c = clipRunes(c, room)
			b.WriteString(c)
			if !last {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(c))+2))
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}

// clipRunes cuts s to n runes, the last one "…" when it was cut.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:max(n, 0)])
	}
	return string(r[:n-1]) + "…"
}

// lockDetails prints one lock in full ('list locks ID').
func lockDetails(w io.Writer, info locks.Info) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "id:\t%s\n", info.ID)
	fmt.Fprintf(tw, "design:\t%s\n", oneLine(info.Design))
	fmt.Fprintf(tw, "source:\t%s\n", oneLine(info.Source))
	fmt.Fprintf(tw, "topology:\t%s\n", info.Topology)
	fmt.Fprintf(tw, "ttl:\t%v\n", info.TTL)
	if info.Fencing != "" {
		fmt.Fprintf(tw, "fencing:\t%s\n", info.Fencing)
	}
	fmt.Fprintf(tw, "weakness:\t%s\n", oneLine(info.Weakness))
	if info.RealOnly != "" {
		fmt.Fprintf(tw, "runs on:\tthe %s\n", oneLine(info.RealOnly))
	}
	if info.Unavailable != "" {
		fmt.Fprintf(tw, "unavailable:\t%s\n", oneLine(info.Unavailable))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return lockParams(w, info)
}

// lockParams prints a lock's parameter table (locks.Info.Params): what a
// scenario file's params block and a sweep's params.<lock>.<name> set.
func lockParams(w io.Writer, info locks.Info) error {
	if len(info.Params) == 0 {
		_, err := fmt.Fprintln(w, "parameters: none")
		return err
	}
	fmt.Fprintf(w, "parameters (a scenario file's params: {%s: {name: value}}):\n", info.ID)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  name\tdefault\tunit\trange\tdoc")
	for _, p := range info.Params {
		unit, rng := p.Unit, ""
		switch p.Kind {
		case locks.KindDuration:
			unit = "duration"
			lo := "[" + p.Format(p.Min)
			if p.Positive {
				lo = "(" + p.Format(p.Min)
			}
			rng = lo + ", " + p.Format(p.Max) + "]"
		case locks.KindChoice:
			rng = strings.Join(p.Choices, " | ")
		default:
			rng = "[" + p.Format(p.Min) + ", " + p.Format(p.Max) + "]"
		}
		line := fmt.Sprintf("  %s\t%s\t%s\t%s\t%s", p.Name, p.Format(p.Default), unit, rng, p.Doc)
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// oneLine collapses runs of white space (tabs, newlines) to one space, so a
// description never breaks the one-per-line, tab-aligned listing.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func newVersionCmd(stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print locksim's module version and the Go version it was built with",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(stdout, versionLine())
			return err
		},
	}
}

// versionLine is "locksim <version> (<go version>)", version "(devel)" when
// the build carries none (go run, go build in the module).
func versionLine() string {
	version, goVersion := "(devel)", runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	return fmt.Sprintf("locksim %s (%s)", version, goVersion)
}
