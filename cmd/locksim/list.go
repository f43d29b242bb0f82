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
	"github.com/locksim/locksim/scenarios"
)

func newListCmd(stdout io.Writer) *cobra.Command {
	list := &cobra.Command{
		Use:   "list locks|scenarios",
		Short: "List the lock designs or the built-in scenarios",
		Long: `List the lock designs or the built-in scenarios, one per line: the id, then
(for locks) the source and the known weakness, or (for scenarios) what it
does. Columns are tab-aligned; the id is always the first field.`,
		// Runnable, so that "list foo" is an error rather than the help.
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return usageErrorf("list: unknown list %q (one of: locks, scenarios)", args[0])
		},
	}
	canaries := false
	listLocks := &cobra.Command{
		Use:   "locks",
		Short: "List the lock designs: id, source, known weakness",
		Long: `List the lock designs: id, source, known weakness. Canaries (locks broken on
purpose, which prove the checkers can fail) are left out unless --canaries.`,
		Args: noArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			for _, id := range locks.AllIDs() {
				info, _ := locks.Get(id)
				if info.Canary && !canaries {
					continue
				}
				weak := oneLine(info.Weakness)
				if info.Unavailable != "" {
					weak = "[" + oneLine(info.Unavailable) + "] " + weak
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\n", id, oneLine(info.Source), weak)
			}
			return tw.Flush()
		},
	}
	listLocks.Flags().BoolVar(&canaries, "canaries", false, "also list the canaries (locks broken on purpose)")
	list.AddCommand(listLocks)
	list.AddCommand(&cobra.Command{
		Use:   "scenarios",
		Short: "List the built-in scenarios: id, description",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			for _, id := range scenarios.IDs() {
				s, _ := scenarios.Get(id)
				fmt.Fprintf(tw, "%s\t%s\n", id, oneLine(s.Description))
			}
			return tw.Flush()
		},
	})
	return list
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
