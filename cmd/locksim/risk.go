package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locksim/locksim/internal/inputfile"
	"github.com/locksim/locksim/locks/catalogue"
	"github.com/locksim/locksim/risk"
	"github.com/locksim/locksim/sim"
)

type riskFlags struct {
	lock         string
	ttl          durationValue
	profile      string
	clients      intValue
	seeds        intValue
	seed         uint64
	json         bool
	printProfile bool
	fromGCTrace  string
}

func newRiskCmd(stdout, stderr io.Writer, h host, code *int) *cobra.Command {
	f := &riskFlags{
		ttl:     durationValue{v: 10 * time.Second, min: risk.MinTTL, max: risk.MaxTTL},
		clients: intValue{v: 3, min: 2, max: risk.MaxClients},
		seeds:   intValue{v: 20, min: 1, max: risk.MaxSeeds},
	}
	cmd := &cobra.Command{
		Use:   "risk --lock ID [--ttl D] [--profile FILE] [--clients N] [--seeds N]",
		Short: "Expected violations per year of a lock under a fault profile, per fault class",
		Long: `Estimate how many times a year a lock, at a TTL, with N clients, lets two
holders in (any unsafe verdict), under a fault profile: fault classes, each
with a rate per process, a size distribution and its sources (docs/RISK.md;
the default profile is risk/default.yaml, printed by --print-profile).

Each class is measured alone, one fault per run: its sizes are cut into
strata in TTLs of the lock, each stratum runs --seeds runs whose fault size
is drawn from the class's distribution within it and whose moment the seed
decides; P(violation | fault) weighed by the strata's shares, times the
class's rate and the processes it can hit, is its violations per year.
Printed: a line a class and the total, each with a conservative 95%
interval, and the total were each class's rate 10x higher or lower. The
same flags give the same numbers. Exit 0 when the estimate is printed.`,
		Example: `  locksim risk --lock redlock --ttl 10s
  locksim risk --lock set-nx-cad --ttl 3s --profile fleet.yaml --seeds 50 --json
  locksim risk --print-profile > fleet.yaml
  locksim risk --from-gctrace gc.log > gc.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.fromGCTrace != "" {
				r, err := inputfile.Open(f.fromGCTrace)
				if err != nil {
					return usageErrorf("--from-gctrace: %s: %v", f.fromGCTrace, err)
				}
				defer r.Close()
				p, skipped, err := risk.FromGCTrace(r, f.fromGCTrace)
				if err != nil {
					return usageErrorf("--from-gctrace: %v", err)
				}
				fmt.Fprintf(stderr, "locksim risk: %d lines skipped (not gctrace); %s\n", skipped, risk.GCTraceNote)
				return p.WriteYAML(stdout)
			}
			if f.printProfile {
				_, err := stdout.Write(risk.DefaultYAML())
				return err
			}
			var p *risk.Profile
			var err error
			if f.profile == "" || f.profile == "default" {
				p, err = risk.Default()
				if err != nil {
					return &codeError{code: exitInternal, err: err} // compiled in
				}
			} else if p, err = risk.Load(f.profile); err != nil {
				return usageErrorf("--profile: %v", err)
			}
			if f.lock == "" {
				return usageErrorf("--lock: required (one of: %s)", strings.Join(catalogue.IDs(), ", "))
			}
			o := risk.Options{Lock: f.lock, TTL: f.ttl.v, Clients: f.clients.v, Seeds: f.seeds.v, Seed: f.seed, Profile: p}
			if err := o.Validate(); err != nil {
				return specError(err)
			}
			fmt.Fprintf(stderr, "locksim risk: %d runs\n", o.Plan())
			*code = h(func(b sim.Bubble) int {
				res, err := risk.Estimate(b, o, func(class string, done, all int) {
					fmt.Fprintf(stderr, "locksim risk: %s done (%d/%d runs)\n", class, done, all)
				})
				if err != nil {
					fmt.Fprintf(stderr, "locksim: risk: %v\n", err)
					return exitInternal
				}
				if f.json {
					out, err := json.Marshal(struct {
						*risk.Result
						Sensitivity []risk.Sensitivity `json:"sensitivity"`
					}{res, res.Sensitivities()})
					if err != nil {
						fmt.Fprintf(stderr, "locksim: risk: %v\n", err)
						return exitInternal
					}
					fmt.Fprintf(stdout, "%s\n", out)
				} else if err := res.WriteText(stdout); err != nil {
					fmt.Fprintf(stderr, "locksim: risk: %v\n", err)
					return exitInternal
				}
				return exitSafe
			})
			return nil
		},
	}
	fl := cmd.Flags()
	fl.SortFlags = false
	fl.StringVar(&f.lock, "lock", "", "lock id (required)")
	fl.Var(&f.ttl, "ttl", "the lease to play the world at (default 10s)")
	fl.StringVar(&f.profile, "profile", "", "fault profile file (default: the shipped one)")
	fl.Var(&f.clients, "clients", "clients contending for the lock (default 3)")
	fl.Var(&f.seeds, "seeds", "runs a stratum (default 20)")
	fl.Uint64Var(&f.seed, "seed", 1, "first seed: every run's world, fault size and moment derive from it")
	fl.BoolVar(&f.json, "json", false, "print one JSON object")
	fl.BoolVar(&f.printProfile, "print-profile", false, "print the default profile and exit")
	fl.StringVar(&f.fromGCTrace, "from-gctrace", "", "print a profile of the Go GC pauses in a GODEBUG=gctrace=1 log and exit")
	return cmd
}
