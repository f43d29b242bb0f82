package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/sweep"
)

func newMergeCmd(stdout io.Writer) *cobra.Command {
	var out string
	charts := true
	cmd := &cobra.Command{
		Use:   "merge --out DIR SHARD_DIR...",
		Short: "Join the directories of a sharded sweep into one",
		Long: `Join the output directories of one sweep run as shards (--shard i/n) into
DIR: results.jsonl in job order (equal, byte for byte, to what the sweep
writes when run unsharded), sweep.json, results.csv, the rate summary and
charts. Every shard 0..n-1 must be given, each complete; a missing or
unfinished shard, a repeated one, or a directory of another sweep is an
error.`,
		Example: `  locksim merge --out merged shard-0 shard-1 shard-2`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usageErrorf("merge: --out: required (the directory to write)")
			}
			if err := sweep.Merge(out, args, stdout, charts); err != nil {
				return sweepErrorIn("merge: ", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the merged sweep to `DIR`; required")
	cmd.Flags().BoolVar(&charts, "charts", true, "draw the rates (rates-*.png and .svg)")
	return cmd
}
