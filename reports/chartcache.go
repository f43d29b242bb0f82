package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/locksim/locksim/internal/charts"
	"github.com/locksim/locksim/internal/store"
	"github.com/locksim/locksim/run"
)

// chartSpec is a chart as the report describes it (charts.RateChart,
// FencingChart, BarChart): plain values, all its picture depends on in
// this build.
type chartSpec interface {
	Figure() (charts.Figure, error)
}

// chartKind heads a chart entry's kind.
const chartKind = "chart png+svg"

// storedChart is a drawn chart entry's payload: its two pictures.
type storedChart struct {
	Key string `json:"key"`
	PNG []byte `json:"png"`
	SVG []byte `json:"svg"`
}

// chartKey is the content key of spec's pictures ("" with no store): the
// build and spec's every field, unexported ones too (%#v, which names its
// type; a pointer would print as its address, so a chart holding one
// would only ever miss, never be answered wrongly).
func (s *Store) chartKey(spec chartSpec) string {
	if s == nil {
		return ""
	}
	return store.ContentKey(s.id, chartKind, fmt.Appendf(nil, "%#v", spec))
}

// saveChart writes spec's chart as base.png and base.svg, each
// atomically: from the result store when it holds the pictures of the
// same content in this build, else drawn (and kept there). The files are
// the same bytes either way.
func (s *Store) saveChart(spec chartSpec, base string) error {
	key := s.chartKey(spec)
	if s != nil {
		s.Charts.Add(1)
	}
	if key != "" {
		if payload, ok, corrupt := s.st.Get(key); ok {
			var e storedChart
			if json.Unmarshal(payload, &e) == nil && e.Key == key && len(e.PNG) > 0 && len(e.SVG) > 0 {
				return writeChart(base, e.PNG, e.SVG)
			}
			s.st.Remove(key)
			s.Corrupt.Add(1)
		} else if corrupt {
			s.Corrupt.Add(1)
		}
	}
	if s != nil {
		s.Drawn.Add(1)
	}
	fig, err := spec.Figure()
	if err != nil {
		return err
	}
	var png, svg bytes.Buffer
	if err := charts.Encode(&png, fig, "png"); err != nil {
		return err
	}
	if err := charts.Encode(&svg, fig, "svg"); err != nil {
		return err
	}
	if err := writeChart(base, png.Bytes(), svg.Bytes()); err != nil {
		return err
	}
	if key != "" {
		payload, err := json.Marshal(storedChart{Key: key, PNG: png.Bytes(), SVG: svg.Bytes()})
		if err == nil {
			err = s.st.Put(key, payload)
		}
		s.failed(err)
	}
	return nil
}

// writeChart writes a chart's two pictures beside base.
func writeChart(base string, png, svg []byte) error {
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		return err
	}
	if err := run.WriteFileAtomic(base+".png", png); err != nil {
		return err
	}
	return run.WriteFileAtomic(base+".svg", svg)
}
