// Package charts draws what locksim found: violation rates with 95%
// Wilson score intervals against a swept parameter (RateChart), lease
// overlaps beside resource violations for fencing designs (FencingChart),
// and counterexample timelines drawn from a checked history (Timeline).
//
// Every figure renders to PNG and SVG (SVG with its fonts embedded, so it
// looks the same offline) with gonum.org/v1/plot. Rendering is pure: the
// same input gives the same bytes, and nothing here reads a clock, the
// network or a random source. Charts import the checker's types and never
// the simulator; the report (package reports) and sweeps use them.
package charts
