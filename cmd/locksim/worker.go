package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/sweep"
	"github.com/locksim/locksim/sim"
)

// newWorkerCmd is the hidden command a parent sweep or report starts for
// each worker (sweep.NewRunners): it serves sweep.ServeWorker's protocol
// on stdin and stdout until stdin closes.
func newWorkerCmd(stdin io.Reader, stdout io.Writer, h host, code *int) *cobra.Command {
	return &cobra.Command{
		Use:    "worker",
		Short:  "Run jobs for a parent sweep or report (internal)",
		Hidden: true,
		Args:   noArgs,
		RunE: func(*cobra.Command, []string) error {
			*code = h(func(b sim.Bubble) int {
				if err := sweep.ServeWorker(stdin, stdout, b); err != nil {
					return exitInternal
				}
				return exitSafe
			})
			return nil
		},
	}
}
