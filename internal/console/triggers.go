package console

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/names"
)

// Triggers and schedules: what starts the workspace's runs without an API
// call (webhook and message triggers, calendars), with what each started
// lately.

// recentRunsScanned is how many of the workspace's newest runs the page
// reads for the recent deliveries of each trigger.
const recentRunsScanned = 100

// recentPerTrigger is how many runs the page shows per trigger.
const recentPerTrigger = 5

type triggerRow struct {
	T           *platformv1.TriggerInstance
	Automations []named
	Recent      []recentRun
	Ready       bool
	Book        string
}

type named struct{ ID, Name string }

type recentRun struct {
	AutoID, RunID, Automation, State, When string
}

type scheduleRow struct {
	AutoID, Automation string
	S                  *platformv1.AutomationSchedule
	Next               []string
}

type triggersData struct {
	pageData
	Triggers    []triggerRow
	Schedules   []scheduleRow
	Unscheduled []named
	Automations []named
	// Secret and Endpoint of a trigger just made (shown once).
	Secret, Endpoint string
	Zones            []string
	Today            string
	Days             []string
}

var scheduleUnits = map[string]platformv1.FrequencyUnit{
	"minute": platformv1.FrequencyUnit_FREQUENCY_UNIT_MINUTE, "hour": platformv1.FrequencyUnit_FREQUENCY_UNIT_HOUR,
	"day": platformv1.FrequencyUnit_FREQUENCY_UNIT_DAY, "week": platformv1.FrequencyUnit_FREQUENCY_UNIT_WEEK,
	"month": platformv1.FrequencyUnit_FREQUENCY_UNIT_MONTH,
}

var weekDays = []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}

func (c *Console) triggerList(w http.ResponseWriter, r *http.Request, s *sess) {
	c.showTriggers(w, r, s, http.StatusOK, "", nil)
}

func (c *Console) showTriggers(w http.ResponseWriter, r *http.Request, s *sess, code int, errMsg string, made *platformv1.TriggerInstance) {
	base, err := c.basics(r, s, "Triggers and schedules")
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	base.Error = errMsg
	base.Notice = done(r, map[string]string{
		"automations": "The trigger's automations are saved.", "remove": "The trigger is removed: its URL or subscription starts nothing now.",
		"schedule": "The schedule is saved.", "enable": "The schedule is on.", "disable": "The schedule is paused: it starts nothing until it is turned on again.",
		"delete": "The schedule is deleted.",
	})
	org, ws := s.OrganizationID, base.WS
	autoNames, autos, err := c.automationNames(s, ws)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &triggersData{pageData: base, Zones: []string{"UTC", "Europe/London", "Europe/Berlin", "America/New_York", "America/Los_Angeles", "Asia/Kolkata", "Asia/Tokyo", "Australia/Sydney"},
		Today: c.opts.Now().UTC().Format("2006-01-02"), Days: weekDays}
	if made != nil {
		d.Secret, d.Endpoint = made.GetConfiguration()["secret"].GetTextValue(), made.GetEndpoint()
		d.Notice = "The trigger is made. Its secret is shown once, below."
	}
	for _, a := range autos {
		d.Automations = append(d.Automations, named{names.ID(a.GetName()), a.GetDisplayName()})
	}
	ti, err := c.triggers.ListWorkspaceTriggerInstances(s.ctx, &platformv1.ListWorkspaceTriggerInstancesRequest{OrganizationId: org, WorkspaceId: ws})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	recent, err := c.recentTriggered(s, ws, autoNames)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	for _, t := range ti.GetTriggerInstances() {
		row := triggerRow{T: t, Recent: recent[t.GetReference()], Book: t.GetBookName(),
			Ready: t.GetStatus().GetStateCategory() == platformv1.TriggerInstanceStateCategory_TRIGGER_INSTANCE_STATE_CATEGORY_READY}
		for _, a := range t.GetAutomationIds() {
			id := names.ID(a)
			row.Automations = append(row.Automations, named{id, autoNames[id]})
		}
		d.Triggers = append(d.Triggers, row)
	}
	// Each automation has at most one schedule (a singleton): one read
	// each, bounded by the automations listed.
	for _, a := range autos {
		id := names.ID(a.GetName())
		sc, err := c.schedules.GetAutomationSchedule(s.ctx, &platformv1.GetAutomationScheduleRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: id})
		if status.Code(err) == codes.NotFound {
			d.Unscheduled = append(d.Unscheduled, named{id, a.GetDisplayName()})
			continue
		}
		if err != nil {
			c.grpcFail(w, r, s, err)
			return
		}
		row := scheduleRow{AutoID: id, Automation: a.GetDisplayName(), S: sc}
		for i, t := range sc.GetNextRunTimes() {
			if i == 3 {
				break
			}
			row.Next = append(row.Next, t.AsTime().UTC().Format("Mon 2 Jan 2006 15:04 UTC"))
		}
		d.Schedules = append(d.Schedules, row)
	}
	c.render(w, r, code, "triggers", d)
}

// recentTriggered groups the workspace's newest runs started by a trigger
// by the trigger's resource name.
func (c *Console) recentTriggered(s *sess, ws string, autoNames map[string]string) (map[string][]recentRun, error) {
	res, err := c.runs.ListRuns(s.ctx, &platformv1.ListRunsRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: "-", PageSize: recentRunsScanned})
	if err != nil {
		return nil, err
	}
	out := map[string][]recentRun{}
	for _, run := range res.GetRuns() {
		t := run.GetInvocationDetails().GetTriggerId()
		if t == "" || len(out[t]) >= recentPerTrigger {
			continue
		}
		_, _, a, id, _ := names.ParseRun(run.GetName())
		st, _ := runState(run.GetState())
		out[t] = append(out[t], recentRun{AutoID: a, RunID: id, Automation: autoNames[a], State: st, When: tsText(run.GetCreateTime())})
	}
	return out, nil
}

// addTrigger makes a webhook trigger instance that starts the ticked
// automations.
func (c *Console) addTrigger(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws := s.OrganizationID, r.PathValue("ws")
	conn, err := c.webhookConnection(s, ws)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	req := &platformv1.AddWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: org, WorkspaceId: ws,
		BookName: books.WebhookBookName, BookVersion: books.TriggerBookVersion, ConnectionId: conn, TriggerId: books.WebhookTriggerID, Name: strings.TrimSpace(r.PostFormValue("name"))}
	if sec := r.PostFormValue("secret"); sec != "" {
		req.Configuration = map[string]*platformv1.BdkValue{"secret": {Kind: &platformv1.BdkValue_TextValue{TextValue: sec}}}
	}
	res, err := c.triggers.AddWorkspaceBookConnectionTriggerInstance(s.ctx, req)
	if err == nil && len(r.PostForm["automation"]) > 0 {
		_, err = c.triggers.SetAutomationsForTriggerInstance(s.ctx, &platformv1.SetAutomationsForTriggerInstanceRequest{OrganizationId: org, WorkspaceId: ws,
			TriggerInstanceId: res.GetTriggerInstance().GetId(), AutomationIds: r.PostForm["automation"]})
	}
	if err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.ResourceExhausted, codes.NotFound); ok {
			c.showTriggers(w, r, s, http.StatusBadRequest, msg, nil)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	c.showTriggers(w, r, s, http.StatusOK, "", res.GetTriggerInstance())
}

// triggerAction sets the automations a trigger starts, or removes it.
func (c *Console) triggerAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, id := s.OrganizationID, r.PathValue("ws"), r.PathValue("id")
	var err error
	action := r.PathValue("action")
	switch action {
	case "automations":
		_, err = c.triggers.SetAutomationsForTriggerInstance(s.ctx, &platformv1.SetAutomationsForTriggerInstanceRequest{OrganizationId: org, WorkspaceId: ws,
			TriggerInstanceId: id, AutomationIds: r.PostForm["automation"]})
	case "remove":
		_, err = c.triggers.RemoveWorkspaceBookConnectionTriggerInstance(s.ctx, &platformv1.RemoveWorkspaceBookConnectionTriggerInstanceRequest{OrganizationId: org, WorkspaceId: ws,
			TriggerInstanceId: id, ConnectionId: r.PostFormValue("connection")})
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	c.afterTriggers(w, r, s, err, action)
}

func (c *Console) afterTriggers(w http.ResponseWriter, r *http.Request, s *sess, err error, action string) {
	if err != nil {
		if msg, ok := mendable(err, codes.InvalidArgument, codes.FailedPrecondition, codes.AlreadyExists); ok {
			c.showTriggers(w, r, s, http.StatusBadRequest, msg, nil)
			return
		}
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, wsURL(r.PathValue("ws"), "triggers")+"?done="+action, http.StatusSeeOther)
}

// createSchedule gives an automation a schedule from the form: a start
// date, a time of day and zone, and a repeat (every N minutes, hours,
// days, weeks on the ticked days, or months), never ending.
func (c *Console) createSchedule(w http.ResponseWriter, r *http.Request, s *sess) {
	cfg, err := scheduleForm(r)
	if err != nil {
		c.showTriggers(w, r, s, http.StatusBadRequest, err.Error(), nil)
		return
	}
	a := r.PathValue("a")
	if a == "-" { // the form of the triggers page names it
		a = r.PostFormValue("automation")
	}
	req := &platformv1.CreateAutomationScheduleRequest{OrganizationId: s.OrganizationID, WorkspaceId: r.PathValue("ws"), AutomationId: a,
		Schedule: &platformv1.AutomationSchedule{Config: cfg}}
	_, err = c.schedules.CreateAutomationSchedule(s.ctx, req)
	if status.Code(err) == codes.AlreadyExists {
		_, err = c.schedules.UpdateAutomationSchedule(s.ctx, &platformv1.UpdateAutomationScheduleRequest{OrganizationId: req.OrganizationId,
			WorkspaceId: req.WorkspaceId, AutomationId: req.AutomationId, Schedule: req.Schedule})
	}
	c.afterTriggers(w, r, s, err, "schedule")
}

func scheduleForm(r *http.Request) (*platformv1.ScheduleConfig, error) {
	day, err := time.Parse("2006-01-02", r.PostFormValue("start_date"))
	if err != nil {
		return nil, fmt.Errorf("give the first day as year-month-day, not %q", r.PostFormValue("start_date"))
	}
	at, err := time.Parse("15:04", r.PostFormValue("time"))
	if err != nil {
		return nil, fmt.Errorf("give the time of day as hours:minutes, not %q", r.PostFormValue("time"))
	}
	unit, ok := scheduleUnits[r.PostFormValue("unit")]
	if !ok {
		return nil, fmt.Errorf("choose how often it repeats")
	}
	every, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("every")))
	if err != nil || every < 1 || every > 1000 {
		return nil, fmt.Errorf("repeat every 1 to 1000 %ss, not %q", r.PostFormValue("unit"), r.PostFormValue("every"))
	}
	cfg := &platformv1.ScheduleConfig{
		Start:          &platformv1.ScheduleStart{StartDate: protoDate(day), Time: &timeofday.TimeOfDay{Hours: int32(at.Hour()), Minutes: int32(at.Minute())}, TimeZone: r.PostFormValue("time_zone")}, //nolint:gosec // G115: a time of day
		RepeatInterval: &platformv1.RepeatInterval{Unit: unit, Interval: int32(every)},                                                                                                                 //nolint:gosec // G115: bounded above
		End:            &platformv1.ScheduleEnd{EndType: platformv1.ScheduleEndType_SCHEDULE_END_TYPE_NEVER},
	}
	if unit == platformv1.FrequencyUnit_FREQUENCY_UNIT_WEEK {
		p := &platformv1.DayOfWeekPattern{}
		for i, name := range weekDays {
			if r.PostFormValue("day."+name) != "" {
				p.Days = append(p.Days, platformv1.DayOfWeek(i+1)) //nolint:gosec // G115: seven days
			}
		}
		if len(p.Days) == 0 {
			return nil, fmt.Errorf("tick the days of the week it runs on")
		}
		cfg.WeeklyPattern = p
	}
	return cfg, nil
}

func (c *Console) scheduleAction(w http.ResponseWriter, r *http.Request, s *sess) {
	org, ws, a := s.OrganizationID, r.PathValue("ws"), r.PathValue("a")
	var err error
	action := r.PathValue("action")
	switch action {
	case "enable":
		_, err = c.schedules.EnableAutomationSchedule(s.ctx, &platformv1.EnableAutomationScheduleRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a})
	case "disable":
		_, err = c.schedules.DisableAutomationSchedule(s.ctx, &platformv1.DisableAutomationScheduleRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a})
	case "delete":
		_, err = c.schedules.DeleteAutomationSchedule(s.ctx, &platformv1.DeleteAutomationScheduleRequest{OrganizationId: org, WorkspaceId: ws, AutomationId: a})
	default:
		c.fail(w, r, s, http.StatusNotFound, "No such action.")
		return
	}
	c.afterTriggers(w, r, s, err, action)
}

// consoleWebhooks names the webhook book's connection that the console's
// webhook triggers are made on (a trigger instance sits on a connection of
// its trigger book).
const consoleWebhooks = "console webhooks"

// webhookConnection returns the id of the workspace's connection named
// consoleWebhooks of the webhook trigger book, adding it the first time.
func (c *Console) webhookConnection(s *sess, ws string) (string, error) {
	tok := ""
	for {
		res, err := c.connections.ListWorkspaceBookConnections(s.ctx, &bookv1.ListWorkspaceBookConnectionsRequest{OrganizationId: s.OrganizationID,
			WorkspaceId: ws, BookName: books.WebhookBookName, BookVersion: books.TriggerBookVersion, PageSize: 1000, PageToken: tok})
		if err != nil {
			return "", err
		}
		for _, d := range res.GetBookConnections() {
			if d.GetConnectionName() == consoleWebhooks {
				return d.GetConnectionId(), nil
			}
		}
		if tok = res.GetNextPageToken(); tok == "" {
			break
		}
	}
	res, err := c.connections.AddWorkspaceBookConnection(s.ctx, &bookv1.AddWorkspaceBookConnectionRequest{OrganizationId: s.OrganizationID,
		WorkspaceId: ws, BookName: books.WebhookBookName, BookVersion: books.TriggerBookVersion, ConnectionName: consoleWebhooks})
	if err != nil {
		return "", err
	}
	return res.GetBookConnectionDescriptor().GetConnectionId(), nil
}
