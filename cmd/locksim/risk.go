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
	fromChrony   string
	fromSentinel string
}

// importer is the --from-* flag given (nil: none), as a function that
// prints the imported profile; two of them are refused.
func (f *riskFlags) importer() (func(stdout, stderr io.Writer) error, error) {
	type imp struct {
		flag, path string
		read       func(io.Reader, string) (*risk.Profile, int, error)
		left, note string
	}
	var set []imp
	for _, i := range []imp{
		{"--from-gctrace", f.fromGCTrace, risk.FromGCTrace, "lines skipped (not gctrace)", risk.GCTraceNote},
		{"--from-chrony", f.fromChrony, risk.FromChrony, "backward steps left out", risk.ChronyNote},
		{"--from-sentinel", f.fromSentinel, risk.FromSentinel, "outages still open at the log's end", risk.SentinelNote},
	} {
		if i.path != "" {
			set = append(set, i)
		}
	}
	switch len(set) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, usageErrorf("%s and %s: import one log at a time", set[0].flag, set[1].flag)
	}
	i := set[0]
	return func(stdout, stderr io.Writer) error {
		r, err := inputfile.Open(i.path)
		if err != nil {
			return usageErrorf("%s: %s: %v", i.flag, i.path, err)
		}
		defer r.Close()
		p, n, err := i.read(r, i.path)
		if err != nil {
			return usageErrorf("%s: %v", i.flag, err)
		}
		fmt.Fprintf(stderr, "locksim risk: %d %s; %s\n", n, i.left, i.note)
		return p.WriteYAML(stdout)
	}, nil
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
  locksim risk --from-gctrace gc.log > gc.yaml
  locksim risk --from-chrony /var/log/messages > steps.yaml`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if imp, err := f.importer(); err != nil {
				return err
			} else if imp != nil {
				return imp(stdout, stderr)
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
	fl.StringVar(&f.fromChrony, "from-chrony", "", "print a profile of the forward clock steps in a chronyd log and exit")
	fl.StringVar(&f.fromSentinel, "from-sentinel", "", "print a profile of the failovers in a Redis Sentinel log and exit")
	return cmd
}
