package server

import (
	"context"
	"errors"
	"fmt"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
	"github.com/proserun/prose/server/transport"
)

// MaxParseCodeBytes bounds the code ParseAutomationCode reads (the request
// body bounds it again on HTTP).
const MaxParseCodeBytes = 256 << 10

// ParseAutomationCode parses code without saving anything and answers its
// syntax errors with their spans (empty when it parses), so an editor can
// show them as the code is typed. The workspace must exist; the caller needs
// automations.write there (checking code is part of editing it).
func (s *AutomationService) ParseAutomationCode(ctx context.Context, req *platformv1.ParseAutomationCodeRequest) (*platformv1.ParseAutomationCodeResponse, error) {
	org, ws := req.GetOrganizationId(), req.GetWorkspaceId()
	if n := len(req.GetCode()); n > MaxParseCodeBytes {
		return nil, transport.InvalidArgument(ReasonInvalidField, fmt.Sprintf("code is %d bytes; at most %d can be parsed at once", n, MaxParseCodeBytes),
			transport.Violation("code", "too long"))
	}
	if err := s.requireWorkspace(ctx, org, ws); err != nil {
		return nil, err
	}
	out := &platformv1.ParseAutomationCodeResponse{}
	prog, err := lang.Parse(req.GetCode())
	var se *lang.SyntaxError
	switch {
	case err == nil:
		out.Warnings = codeWarnings(prog)
	case errors.As(err, &se):
		out.Errors = append(out.Errors, &platformv1.CodeSyntaxError{
			Message:  se.Msg,
			Location: &platformv1.Location{StartByte: int64(se.Span.Start), EndByte: int64(se.Span.End)},
			Line:     int32(min(se.Line, 1<<31-1)), Column: int32(min(se.Col, 1<<31-1)), //nolint:gosec // G115: clamped
		})
	default:
		out.Errors = append(out.Errors, &platformv1.CodeSyntaxError{Message: err.Error(), Location: &platformv1.Location{}})
	}
	return out, nil
}

// codeWarnings are the warnings of the syntax check of a parsed program
// (lang.Program.Warnings), in the API's shape.
func codeWarnings(prog *lang.Program) []*platformv1.CodeWarning {
	var out []*platformv1.CodeWarning
	for _, w := range prog.Warnings() {
		out = append(out, &platformv1.CodeWarning{
			Message:  w.Msg,
			Location: &platformv1.Location{StartByte: int64(w.Span.Start), EndByte: int64(w.Span.End)},
			Line:     int32(min(w.Line, 1<<31-1)), Column: int32(min(w.Col, 1<<31-1)), //nolint:gosec // G115: clamped
		})
	}
	return out
}

// withCodeWarnings sets the code warnings of an automation's draft, as
// CreateAutomation and UpdateAutomation answer them. Code that does not
// parse has none (it was refused, or it was saved before a change of the
// language: its errors are ParseAutomationCode's answer).
func withCodeWarnings(a *platformv1.Automation, err error) (*platformv1.Automation, error) {
	if err != nil {
		return nil, err
	}
	if prog, perr := lang.Parse(a.GetEnglishCode()); perr == nil {
		a.CodeWarnings = codeWarnings(prog)
	}
	return a, nil
}
