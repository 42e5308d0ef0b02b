package console

import (
	"net/http"
	"net/url"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/names"
)

// agentID is the built-in agent whose thread the exception page shows.
const agentID = "prose"

type eventView struct {
	Who, Text string
	Streaming bool
}

type conversationData struct {
	pageData
	Events []eventView
}

// runOf returns the automation and run ids of an exception.
func (c *Console) runOf(s *sess, ws, id string) (string, string, error) {
	x, err := c.exceptions.GetException(s.ctx, &platformv1.GetExceptionRequest{OrganizationId: s.OrganizationID, WorkspaceId: ws, ExceptionId: id})
	if err != nil {
		return "", "", err
	}
	_, _, automation, run, ok := names.ParseRun(x.GetRun())
	if !ok {
		return "", "", nil
	}
	return automation, run, nil
}

// conversation renders the run's thread with the agent (an htmx fragment
// the exception page polls, so an answer shows as it streams).
func (c *Console) conversation(w http.ResponseWriter, r *http.Request, s *sess) {
	ws := r.PathValue("ws")
	a, run, err := c.runOf(s, ws, r.PathValue("id"))
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	res, err := c.events.ListEvents(s.ctx, &platformv1.ListEventsRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: a, RunId: run, AgentId: agentID, PageSize: 200,
	})
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	d := &conversationData{}
	for _, ev := range res.GetEvents() {
		v := eventView{Streaming: ev.GetState() == platformv1.Event_STATE_STREAMING}
		switch p := ev.GetPayload().(type) {
		case *platformv1.Event_UserMessage:
			v.Who, v.Text = "you", p.UserMessage.GetContent()
			if u := p.UserMessage.GetUser(); u != "" && u != names.User(s.UserID) {
				v.Who = u
			}
		case *platformv1.Event_AgentMessage:
			v.Who, v.Text = "agent", p.AgentMessage.GetContent()
		case *platformv1.Event_ToolCallRequest:
			v.Who, v.Text = "agent", "(acts on the run)"
		default:
			continue
		}
		if strings.TrimSpace(v.Text) == "" && !v.Streaming {
			continue
		}
		d.Events = append(d.Events, v)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := c.pages["conversation"].ExecuteTemplate(w, "content", d); err != nil {
		c.opts.Logger.Error("console: render conversation", "err", err)
	}
}

// say adds the person's message to the run's thread; the agent answers
// (and may resolve the exception).
func (c *Console) say(w http.ResponseWriter, r *http.Request, s *sess) {
	ws, id := r.PathValue("ws"), r.PathValue("id")
	text := strings.TrimSpace(r.PostFormValue("message"))
	if text == "" {
		c.fail(w, r, s, http.StatusBadRequest, "Write a message first.")
		return
	}
	a, run, err := c.runOf(s, ws, id)
	if err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	if _, err := c.events.CreateEvent(s.ctx, &platformv1.CreateEventRequest{
		OrganizationId: s.OrganizationID, WorkspaceId: ws, AutomationId: a, RunId: run, AgentId: agentID,
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: text}}},
	}); err != nil {
		c.grpcFail(w, r, s, err)
		return
	}
	http.Redirect(w, r, "/w/"+url.PathEscape(ws)+"/exceptions/"+url.PathEscape(id)+"#conversation", http.StatusSeeOther)
}
