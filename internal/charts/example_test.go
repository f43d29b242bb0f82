package charts_test

import (
	"fmt"

	"github.com/locksim/locksim/internal/stats"
)

// A rate with its 95% Wilson score interval: 3 unsafe runs of 200.
func ExampleRate() {
	r := stats.Rate{K: 3, N: 200}
	fmt.Println(r)
	lo, hi := stats.Wilson(0, 200)
	fmt.Printf("0/200: [%.2f%%, %.2f%%]\n", 100*lo, 100*hi)
	// Output:
	// 3/200 = 1.5% [0.5%, 4.3%]
	// 0/200: [0.00%, 1.88%]
}
