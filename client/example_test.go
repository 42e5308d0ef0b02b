package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"time"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

const invoiceCode = `get the invoice total
the output due is the invoice total * 1.07
`

// createInvoice creates an automation in the examples' workspace.
func createInvoice(ctx context.Context, c *client.Client, id string) string {
	org, ws := splitWorkspace(workspace)
	a, err := c.Automations.CreateAutomation(ctx, &platformv1.CreateAutomationRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: id,
		Automation: &platformv1.Automation{DisplayName: "Invoices", EnglishCode: invoiceCode},
	})
	if err != nil {
		log.Fatal(err)
	}
	return a.GetName()
}

func ExampleClient_Invoke() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(address, apiKey) // "https://prose.example.com" dials with TLS
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	automation := createInvoice(ctx, c, "invoke-example")

	// Inputs are plain values; json.Number keeps the digits (120.50).
	run, err := c.Invoke(ctx, automation, map[string]any{"invoice_total": json.Number("120.50")}, client.Draft())
	if err != nil {
		log.Fatal(err)
	}
	r, err := c.WaitForRun(ctx, run)
	if err != nil {
		log.Fatal(err)
	}
	outputs, err := client.Outputs(r)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.StateName(r), outputs["output due"])
	// Output: completed 128.9350
}

func ExampleClient_ResolveException() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(address, apiKey)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	automation := createInvoice(ctx, c, "resolve-example")

	// Without its input the run waits for a person.
	run, err := c.Invoke(ctx, automation, nil, client.Draft())
	if err != nil {
		log.Fatal(err)
	}
	r, err := c.WaitForRun(ctx, run)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(client.StateName(r), r.GetState().GetAwaitingGuidance().GetDescription())

	// Provide the value it misses, by fact name; the run goes on.
	if _, err := c.ResolveException(ctx, client.ExceptionOf(r), client.ProvideValues(map[string]any{"invoice total": json.Number("200")})); err != nil {
		log.Fatal(err)
	}
	if r, err = c.WaitForRun(ctx, run); err != nil {
		log.Fatal(err)
	}
	outputs, _ := client.Outputs(r)
	fmt.Println(client.StateName(r), outputs["output due"])
	// Output:
	// awaiting_guidance Please provide the invoice total
	// completed 214.00
}

func ExampleClient_StreamEvents() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(address, apiKey)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	automation := createInvoice(ctx, c, "events-example")
	run, err := c.Invoke(ctx, automation, nil, client.Draft())
	if err != nil {
		log.Fatal(err)
	}
	// A person writes to the run's agent ("prose", built in)…
	org, ws := splitWorkspace(workspace)
	if _, err := c.Events.CreateEvent(ctx, &platformv1.CreateEventRequest{
		OrganizationId: org, WorkspaceId: ws, AutomationId: "events-example", RunId: lastSegment(run), AgentId: "prose",
		Event: &platformv1.Event{Payload: &platformv1.Event_UserMessage{UserMessage: &platformv1.UserMessage{Content: "What is missing?"}}},
	}); err != nil {
		log.Fatal(err)
	}
	// …and the stream shows the conversation as it is written.
	err = c.StreamEvents(ctx, run, "prose", 0, func(ev *platformv1.StreamEventsResponse) error {
		if m := ev.GetEvent().GetUserMessage(); m != nil {
			fmt.Println("user:", m.GetContent())
			return io.EOF // enough: end the stream
		}
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	// Output: user: What is missing?
}
