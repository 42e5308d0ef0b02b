package agent

import (
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
)

// SizeError is an event an agent would write over a cap: the whole event
// over Options.MaxEventBytes, or a message's content over
// Options.MaxMessageBytes, the caps of the events clients write. It is
// INVALID_ARGUMENT FIELD_TOO_LARGE naming the field (its GRPCStatus), and
// wraps store.ErrInvalidArgument. Nothing is written.
type SizeError struct {
	Field string // "event.agent_message.content", "event.tool_call_request"
	What  string // "a message", "an event"
	Size  int
	Max   int
}

func (e *SizeError) Error() string {
	return fmt.Sprintf("invalid argument: %s is %d bytes; %s may be at most %d bytes", e.Field, e.Size, e.What, e.Max)
}

// Unwrap makes a SizeError a store.ErrInvalidArgument.
func (e *SizeError) Unwrap() error { return store.ErrInvalidArgument }

// GRPCStatus is INVALID_ARGUMENT FIELD_TOO_LARGE with a BadRequest
// violation on the field.
func (e *SizeError) GRPCStatus() *status.Status {
	desc := fmt.Sprintf("is %d bytes; %s may be at most %d bytes", e.Size, e.What, e.Max)
	st, err := status.New(codes.InvalidArgument, e.Field+" "+desc).WithDetails(
		&errdetails.ErrorInfo{Reason: "FIELD_TOO_LARGE", Domain: "prose.run", Metadata: map[string]string{"field": e.Field}},
		&errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.Field, Description: desc}}})
	if err != nil {
		return status.New(codes.InvalidArgument, e.Error())
	}
	return st
}

// checkSize applies the caps of client-written events to an event an agent
// writes: a message's content (agent_message, completion_response) at most
// maxMessage bytes, the whole event at most maxEvent bytes (its protobuf
// size, as CreateEvent measures a client's event).
func checkSize(ev *platformv1.Event, maxMessage, maxEvent int) error {
	field := "event"
	if fd := ev.ProtoReflect().WhichOneof(ev.ProtoReflect().Descriptor().Oneofs().ByName("payload")); fd != nil {
		field += "." + string(fd.Name())
	}
	var content string
	switch p := ev.GetPayload().(type) {
	case *platformv1.Event_AgentMessage:
		content = p.AgentMessage.GetContent()
	case *platformv1.Event_CompletionResponse:
		content = p.CompletionResponse.GetContent()
	}
	if maxMessage > 0 && len(content) > maxMessage {
		return &SizeError{Field: field + ".content", What: "a message", Size: len(content), Max: maxMessage}
	}
	if n := proto.Size(ev); maxEvent > 0 && n > maxEvent {
		return &SizeError{Field: field, What: "an event", Size: n, Max: maxEvent}
	}
	return nil
}
