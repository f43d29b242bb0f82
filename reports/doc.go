// Package reports is the debate report: every built-in scenario run with
// the locks it is meant for, N seeds a cell, plus a sweep of a client
// pause before the protected write, judged, tallied and written as
// results.json, report.md, index.html (the findings and a heat map of
// every cell) and one page per lock and per scenario, with their charts
// and counterexample timelines.
//
// The path is one direction: Options → NewPlan (the cells and their
// runs, validated) → Plan.Run (every run on the sweep package's runners
// and ordered pool, then each unsafe cell's first unsafe seed again, drawn
// as a timeline and checked against its first trace hash) → Plan.Results
// (the results.json model) → Plan.Write (the model rendered to Markdown
// through text/template and to HTML through html/template, from one view
// model, so the two documents cannot disagree). Output stages the files
// beside the destination and moves them into place only when complete.
//
// Pictures are drawn by internal/charts.
package reports
