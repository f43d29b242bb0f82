//go:build !unix

package sweep

import "time"

// CPUTime is 0 where getrusage is not available: runs then cost nothing
// measured, and reports show 0.
func CPUTime() time.Duration { return 0 }
