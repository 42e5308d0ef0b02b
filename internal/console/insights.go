package console

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// The windows the insights page offers, in days.
var insightWindows = []int{7, 30, 90}

type insightsData struct {
	pageData
	Days    int
	Windows []int
	Zone    string
	// The figures of the window.
	Runs, Awaiting  int64
	STP, Completion float64
	Money, Time     string
	// The charts.
	PerDay, Completions, Value, Saved, AwaitingChart template.HTML
	STPRing, PerAutomation                           template.HTML
	HasRuns                                          bool
	// Estimates per automation (the form sets them).
	Estimates []estimateRow
}

type estimateRow struct {
	ID, Name, Cost string
	Minutes        string
}

// insights shows the workspace's insights over a window as charts.
func (c *Console) insights(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showInsights(w, r, s, http.StatusOK, "")
}

func (c *Console) showInsights(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string) {
	base, err := c.basics(r, s, "Insights")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, map[string]string{"estimates": "The estimates are saved: the money and time saved below use them."})
	q := r.URL.Query()
	d := &insightsData{pageData: base, Days: 30, Windows: insightWindows, Zone: "UTC"}
	if n, err := strconv.Atoi(q.Get("days")); err == nil {
		for _, x := range insightWindows {
			if x == n {
				d.Days = n
			}
		}
	}
	if z := q.Get("tz"); z != "" {
		if _, err := time.LoadLocation(z); err != nil {
			base.Error = fmt.Sprintf("%q is not a time zone; the insights are shown in UTC.", z)
		} else {
			d.Zone = z
		}
	}
	d.pageData = base
	org, ws := s.OrganizationID, base.WS
	loc, _ := time.LoadLocation(d.Zone)
	now := c.opts.Now().In(loc)
	end := now
	start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc).AddDate(0, 0, -(d.Days - 1))

	daily, err := c.insightsSvc.QueryDailyRunAggregates(s.ctx, &platformv1.QueryDailyRunAggregatesRequest{
		OrganizationId: org, WorkspaceId: ws, TimeZone: d.Zone, StartDate: protoDate(start), EndDate: protoDate(end),
	})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	ins, err := c.insightsSvc.QueryInsights(s.ctx, &platformv1.QueryInsightsRequest{OrganizationId: org, Filter: &platformv1.InsightsFilter{
		WorkspaceIds: []string{ws},
		TimeWindow:   &platformv1.InsightsTimeWindow{StartTime: timestamppb.New(start), EndTime: timestamppb.New(end), TimeZone: d.Zone},
	}})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d.fillCharts(daily, ins, names.Workspace(org, ws))
	if err := c.fillEstimates(s, d); err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	c.render(w, r, code, "insights", d)
}

func protoDate(t time.Time) *date.Date {
	return &date.Date{Year: int32(t.Year()), Month: int32(t.Month()), Day: int32(t.Day())} //nolint:gosec // G115: a calendar date
}

// fillCharts draws the window's charts from the two answers.
func (d *insightsData) fillCharts(daily *platformv1.QueryDailyRunAggregatesResponse, ins *platformv1.QueryInsightsResponse, wsName string) {
	window := fmt.Sprintf("the last %d days", d.Days)
	var labels []string
	var perDay []float64
	for _, e := range daily.GetDailyRunAggregates() {
		labels = append(labels, e.GetDate())
		perDay = append(perDay, float64(e.GetStats().GetTotalRuns()))
	}
	ri, ci, vi, ai := ins.GetRunInsight(), ins.GetCompletionInsight(), ins.GetValueInsight(), ins.GetAwaitingGuidanceInsight()
	d.Runs, d.Awaiting = ri.GetTotalRunsCount(), ai.GetTotalRunsAwaitingGuidance()
	d.STP, d.Completion = ci.GetStp(), ci.GetTotalPercentCompletions()
	d.Money, d.Time = money(vi.GetTotalMoneySavedUsd()), duration(vi.GetTotalTimeSavedSecs())
	d.HasRuns = d.Runs > 0
	d.PerDay = barChart{ID: "chart-runs", Title: "Runs per day", Labels: labels,
		Desc:   fmt.Sprintf("%d runs were started in %s, %s.", d.Runs, window, peak(labels, perDay)),
		Series: []barSeries{{Name: "runs", Class: "bar-a", Values: perDay}}}.SVG()

	var pl []string
	var auto, manual []float64
	for _, p := range ci.GetCompletionsPerPeriod() {
		pl = append(pl, p.GetWindowLabel())
		auto = append(auto, float64(p.GetAutoCompletedCount()))
		manual = append(manual, float64(p.GetManuallyResolvedCount()))
	}
	d.STPRing = ringChart("chart-stp", "Straight-through rate",
		fmt.Sprintf("%.0f%% of the runs completed in %s needed no person or agent.", d.STP, window), d.STP)
	d.Completions = barChart{ID: "chart-completions", Title: "Completed runs: straight through or guided", Labels: pl,
		Desc:   fmt.Sprintf("Of the completed runs, %s went straight through and %s needed guidance.", plainNumber(sum(auto)), plainNumber(sum(manual))),
		Series: []barSeries{{Name: "straight through", Class: "bar-a", Values: auto}, {Name: "guided by a person or an agent", Class: "bar-b", Values: manual}}}.SVG()

	var vl []float64
	var sl []float64
	var vlabels []string
	for _, p := range vi.GetInsightsPerPeriodPerWorkspace()[wsName].GetValues() {
		vlabels = append(vlabels, p.GetWindowLabel())
		f, _ := strconv.ParseFloat(p.GetMoneySavedUsd(), 64)
		vl = append(vl, f)
		sl = append(sl, float64(p.GetTimeSavedSecs())/3600)
	}
	d.Value = barChart{ID: "chart-money", Title: "Money saved", Labels: vlabels, Unit: func(v float64) string { return "$" + plainNumber(v) },
		Desc:   fmt.Sprintf("The completed runs saved %s in %s.", d.Money, window),
		Series: []barSeries{{Name: "money saved", Class: "bar-c", Values: vl}}}.SVG()
	d.Saved = barChart{ID: "chart-time", Title: "Time saved (hours)", Labels: vlabels, Unit: func(v float64) string { return plainNumber(v) + " h" },
		Desc:   fmt.Sprintf("The completed runs saved %s in %s.", d.Time, window),
		Series: []barSeries{{Name: "hours saved", Class: "bar-c", Values: sl}}}.SVG()

	var al []string
	var av []float64
	for _, p := range ai.GetRunsPerPeriod() {
		al = append(al, p.GetWindowLabel())
		av = append(av, float64(p.GetRunsAwaitingGuidance()))
	}
	d.AwaitingChart = barChart{ID: "chart-awaiting", Title: "Runs awaiting guidance, by the day they started", Labels: al,
		Desc:   fmt.Sprintf("%d runs started in %s wait for guidance now.", d.Awaiting, window),
		Series: []barSeries{{Name: "awaiting guidance", Class: "bar-b", Values: av}}}.SVG()

	var rows []hbar
	for _, a := range ri.GetInsightsPerAutomationPerWorkspace()[wsName].GetValues() {
		rows = append(rows, hbar{Label: a.GetDisplayName(), Value: float64(a.GetRunsCount())})
	}
	desc := "No runs in the window."
	if len(rows) > 0 {
		parts := make([]string, len(rows))
		for i, r := range rows {
			parts[i] = fmt.Sprintf("%s %s", r.Label, plainNumber(r.Value))
		}
		desc = "Runs per automation: " + strings.Join(parts, ", ") + "."
	}
	d.PerAutomation = hbarChart("chart-automations", "Runs per automation", desc, rows, nil)
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

// peak says which day had the most runs.
func peak(labels []string, v []float64) string {
	best := -1
	for i, x := range v {
		if x > 0 && (best < 0 || x > v[best]) {
			best = i
		}
	}
	if best < 0 {
		return "none on any day"
	}
	return fmt.Sprintf("the most (%s) on %s", plainNumber(v[best]), labels[best])
}

// money writes a decimal amount of dollars as people do ("$1,250.00").
func money(s string) string {
	if s == "" {
		s = "0"
	}
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "00")[:2]
	var b strings.Builder
	for i, ch := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return "$" + b.String() + "." + frac
}

// duration writes seconds saved as hours and minutes.
func duration(secs int64) string {
	h, m := secs/3600, (secs%3600)/60
	switch {
	case h == 0 && m == 0:
		return "0 min"
	case h == 0:
		return fmt.Sprintf("%d min", m)
	case m == 0:
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// fillEstimates lists the workspace's automations with the estimate of
// each (what a completed run saves).
func (c *Console) fillEstimates(s *sess, d *insightsData) error {
	autos, err := c.automations.ListAutomations(s.ctx, &platformv1.ListAutomationsRequest{OrganizationId: s.OrganizationID, WorkspaceId: d.WS, PageSize: maxListed})
	if err != nil {
		return err
	}
	est, err := c.insightsSvc.QueryAutomationEstimates(s.ctx, &platformv1.QueryAutomationEstimatesRequest{OrganizationId: s.OrganizationID})
	if err != nil {
		return err
	}
	by := map[string]*platformv1.AutomationEstimate{}
	for _, e := range est.GetWorkspaceEstimates()[names.Workspace(s.OrganizationID, d.WS)].GetEstimates() {
		by[names.ID(e.GetAutomationId())] = e
	}
	for _, a := range autos.GetAutomations() {
		id := names.ID(a.GetName())
		row := estimateRow{ID: id, Name: a.GetDisplayName()}
		if e := by[id]; e != nil {
			row.Cost = e.GetCostUsd()
			row.Minutes = plainNumber(float64(e.GetTimeSavedSecs()) / 60)
		}
		d.Estimates = append(d.Estimates, row)
	}
	return nil
}

// maxListed bounds the items a page lists in one answer.
const maxListed = 200

// setEstimates sets what a completed run of each automation saves: the
// form's cost.{id} (dollars) and minutes.{id}. Both empty leaves an
// automation that had none without one, and sets one that had an
// estimate (had.{id}) to nothing saved: the API keeps an estimate per
// automation and has no removal.
func (c *Console) setEstimates(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	var es []*platformv1.AutomationEstimate
	for _, id := range r.PostForm["automation"] {
		cost := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(r.PostFormValue("cost."+id)), "$"))
		mins := strings.TrimSpace(r.PostFormValue("minutes." + id))
		if cost == "" && mins == "" && r.PostFormValue("had."+id) == "" {
			continue
		}
		if cost == "" {
			cost = "0"
		}
		secs := 0
		if mins != "" {
			m, err := strconv.ParseFloat(mins, 64)
			if err != nil || m < 0 || m > 7*24*60 {
				c.showInsights(w, r, s, http.StatusBadRequest, fmt.Sprintf("%q is not a number of minutes between 0 and 10080 (a week).", mins))
				return
			}
			secs = int(m * 60)
		}
		es = append(es, &platformv1.AutomationEstimate{AutomationId: names.Automation(s.OrganizationID, ws, id), CostUsd: cost, TimeSavedSecs: int32(secs)}) //nolint:gosec // G115: bounded above
	}
	if len(es) == 0 {
		c.showInsights(w, r, s, http.StatusBadRequest, "Give a cost or a time for at least one automation.")
		return
	}
	_, err := c.insightsSvc.ConfigureAutomationEstimates(s.ctx, &platformv1.ConfigureAutomationEstimatesRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationEstimates: es})
	if err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.NotFound); ok {
			c.showInsights(w, r, s, http.StatusBadRequest, msg)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/insights?done=estimates", http.StatusSeeOther)
}
