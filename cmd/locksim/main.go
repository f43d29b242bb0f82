// Command locksim runs distributed-lock clients (real go-redis clients)
// against simulated Redis nodes in virtual time, injects faults and judges
// whether the lock kept its promise.
//
// Usage:
//
//	locksim run --lock redlock --seed 1
//	locksim list locks
//	locksim version
//
// See `locksim --help` for the exit codes.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locksim/locksim/sim"
)

// Exit codes. They are part of the CLI's contract: scripts and CI branch on
// them (see the long help text).
const (
	exitSafe     = 0  // the run finished and no violation was found
	exitUnsafe   = 1  // safety violation: two clients believed they held the lock at once
	exitLiveness = 3  // liveness failure: no client got the lock after the heal (not 2: Go uses 2 for a crash)
	exitUnknown  = 4  // the run could not be judged completely (event budget, capped history)
	exitUsage    = 64 // bad command line or input (BSD sysexits EX_USAGE)
	exitInternal = 70 // internal error: a bug in locksim, or a replay diverged (EX_SOFTWARE)
)

const rootLong = `locksim answers "is this distributed lock safe, under which faults, and how
often does it fail?" by simulation: real go-redis clients run a lock design
against in-process Redis nodes in virtual time, a seed decides every fault,
latency and scheduling choice, and a checker judges the history. The same
seed always gives the same trace (its SHA-256 is the last line of "run").

Exit codes:
  0   safe: the run finished and no violation was found
  1   unsafe: the lock's claim broke (class double-hold, resource or ownership; see run --help)
  3   liveness failure: no client got the lock after the faults healed
  4   unknown: the run could not be judged completely
  64  usage or input error (bad flag, unknown lock or scenario)
  70  internal error (a bug; a replay diverged)
  130 interrupted (Ctrl-C): a sweep resumes when rerun; a report writes
      nothing and starts again; a run says how far it got and what it did
      not write
A --trace or --counterexample file that could not be written after the run
(a full disk, --trace-max-mb) does not change the exit code: the run
prints its summary and says so on stderr.`

// host runs body, which needs a synctest bubble, and returns its exit code.
// The CLI's host is sim.HostMain, which never returns: it exits the process.
type host func(body func(b sim.Bubble) int) int

// hostProcess hosts body in this process and exits with its code.
func hostProcess(body func(b sim.Bubble) int) int {
	sim.HostMain(body)
	return exitInternal // not reached: HostMain exits
}

func main() {
	subprocessWorkers = true // sweep and report may start "locksim worker" copies of this binary
	userCache = true         // report keeps its runs in the user's cache directory unless told otherwise
	os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr, hostProcess))
}

// codeError is an error that carries its own exit code.
type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// usageErrorf makes an input error (exit 64).
func usageErrorf(format string, a ...any) error {
	return &codeError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// execute parses args, validates them, and runs the command, writing to
// stdout and stderr; it returns the process exit code. A command that needs
// a synctest bubble (run) is handed to h once all input is validated, as
// the very last step.
func execute(args []string, stdout, stderr io.Writer, h host) int {
	code := exitSafe
	root := newRootCmd(stdout, stderr, h, &code)
	root.SetArgs(args)
	err := misspelledCommand(root, args)
	if err == nil {
		err = root.Execute()
	}
	if err != nil {
		fmt.Fprintf(stderr, "locksim: %s\n", errorLine(err))
		var ce *codeError
		if errors.As(err, &ce) {
			return ce.code
		}
		return exitUsage // cobra's own errors: unknown command or flag, bad arguments
	}
	return code
}

// unknownCommand is the error for "locksim <name>" with no such command.
func unknownCommand(cmd *cobra.Command, name string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	hint := ""
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		hint = fmt.Sprintf("did you mean %q? ", s[0])
	}
	return usageErrorf("unknown command %q (%scommands: %s)", name, hint, strings.Join(names, ", "))
}

// misspelledCommand is the error for a first argument that names no
// command ("locksim ru --lock x"): the command name is the mistake, not
// the flags after it, which the root command would otherwise reject first
// ("unknown flag: --lock").
func misspelledCommand(root *cobra.Command, args []string) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") || args[0] == "help" {
		return nil
	}
	if c, _, err := root.Find(args); err == nil && c == root {
		return unknownCommand(root, args[0])
	}
	return nil
}

// noArgs rejects positional arguments for a command that takes only flags.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		return usageErrorf("%s: unexpected argument %q (it takes only flags; see '%s --help')", name, args[0], cmd.CommandPath())
	}
	return nil
}

// errorLine renders err as one line: a pflag value error is rewritten to
// name the flag first; anything multi-line is cut to its first line.
func errorLine(err error) string {
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		return fmt.Sprintf("--%s: %v", ive.GetFlag().Name, errors.Unwrap(ive))
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

func newRootCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	root := &cobra.Command{
		Use:           "locksim",
		Short:         "Simulate distributed locks under faults and judge their safety",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Runnable, so that an unknown command gets our one-line error
		// instead of cobra's multi-line suggestion block.
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return unknownCommand(cmd, args[0])
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// A bad value is reported by errorLine with the flag's range; other
		// flag errors (unknown flag, missing value) get a pointer to help.
		return &codeError{code: exitUsage, err: fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())}
	})
	root.AddCommand(newRunCmd(stdout, stderr, h, code))
	root.AddCommand(newReplayCmd(stdout, stderr, h, code))
	root.AddCommand(newSearchCmd(stdout, stderr, h, code))
	root.AddCommand(newListCmd(stdout))
	root.AddCommand(newSweepCmd(stdout, stderr, h, code))
	root.AddCommand(newMergeCmd(stdout))
	root.AddCommand(newReportCmd(stdout, stderr, h, code))
	root.AddCommand(newParityCmd(stdout, stderr, h, code))
	root.AddCommand(newBenchCmd(stdout, stderr, h, code))
	root.AddCommand(newRiskCmd(stdout, stderr, h, code))
	root.AddCommand(newWorkerCmd(os.Stdin, stdout, h, code))
	root.AddCommand(newVersionCmd(stdout))
	refuseRepeats(root)
	return root
}
