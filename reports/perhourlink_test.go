package reports

import (
	"bytes"
	"strings"
	"testing"
)

// TestRateCaveatsLinkPerHour: each per-run rate's caveat on the index
// (the verdicts' and the heat map's) and in report.md links to the
// per-year chart's section, or, when the report left the chart out, to
// the settings line that says why; the anchor it names exists.
func TestRateCaveatsLinkPerHour(t *testing.T) {
	for _, tc := range []struct {
		figs     []figure
		href, md string
	}{
		{[]figure{{Title: perYearTitle, PNG: "img/per-year.png"}}, "#fig-violations-per-year-of-operation", "#violations-per-year-of-operation"},
		{nil, "#settings", "#settings"},
	} {
		v := view{}
		for _, f := range tc.figs {
			f.Anchor = "fig-" + slug(f.Title)
			v.Figures = append(v.Figures, f)
		}
		v.PerHour = perHourLink(v.Figures)
		var page, md bytes.Buffer
		if err := htmlTemplate.Execute(&page, v); err != nil {
			t.Fatal(err)
		}
		if err := mdTemplate.Execute(&md, v); err != nil {
			t.Fatal(err)
		}
		html := page.String()
		if n := strings.Count(html, `<a href="`+tc.href+`">`+v.PerHour.Text+`</a>`); n != 2 {
			t.Errorf("%d caveats link %s on the index, want 2 (the verdicts' and the heat map's)", n, tc.href)
		}
		if !strings.Contains(html, `id="`+strings.TrimPrefix(tc.href, "#")+`"`) {
			t.Errorf("the index has no section %s", tc.href)
		}
		if !strings.Contains(md.String(), "("+tc.md+")") {
			t.Errorf("report.md's caveat does not link %s", tc.md)
		}
		if strings.Contains(html, "the per-year chart below") != (len(tc.figs) > 0) {
			t.Errorf("the caveat speaks of a per-year chart below where there is none, or not where there is one")
		}
	}
}
