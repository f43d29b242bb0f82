package run

// Request is one job for a runner: the run, and whether to draw it.
type Request struct {
	Spec Spec `json:"spec"`
	// Timeline, if set, asks the runner to draw the run's first violation.
	Timeline *TimelineRequest `json:"timeline,omitempty"`
}

// TimelineRequest asks a runner to draw the run's first violation.
type TimelineRequest struct {
	Path    string   `json:"path"`  // PNG or SVG, by extension
	Title   string   `json:"title"` // the violation's kind, time and clients are appended
	Caption []string `json:"caption,omitempty"`
}

// A Runner runs jobs one at a time for one worker: in this process's
// bubbles, in a worker process, or on the real arm. An error is a job
// that could not be judged at all (an invalid spec, a panic, a dead
// worker process); an incomplete run is an Outcome with Error set.
type Runner interface {
	Run(Request) (Outcome, error)
	Close() error
}
