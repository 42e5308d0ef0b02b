package lang

import (
	"fmt"
	"strings"
)

// Group is the class of an exception, as the platform reports it.
type Group string

// The exception groups.
const (
	GroupMissingValues   Group = "missing_values"
	GroupUserSystemError Group = "user_system_error"
	GroupInternalError   Group = "internal_error"
)

// Exception is why a run waits for guidance: where it happened, and what a
// person or an agent is asked for.
type Exception struct {
	Group   Group  `json:"group"`
	Message string `json:"message"`
	Span    Span   `json:"location"`
	// Fact is the fact to provide, for a missing value ("the invoice's total").
	Fact string `json:"fact,omitempty"`
	// Question and Choices are set for ask.
	Question string  `json:"question,omitempty"`
	Choices  []Value `json:"choices,omitempty"`
	// AnswerType, when set, is the type the answer must have: "text",
	// "number", "boolean", "date", "datetime" or "time" (a book's question,
	// see BookQuestion).
	AnswerType string `json:"answer_type,omitempty"`
	// Failed lists the failed checks of validate.
	Failed []string `json:"failed,omitempty"`
}

func (e *Exception) Error() string { return string(e.Group) + ": " + e.Message }

// raise is an exception on its way up from an expression to its statement,
// which gives it a span.
type raise struct {
	group    Group
	msg      string
	fact     string
	question string
	choices  []Value
	failed   []string
	// answerType and bookQuestion are set for a book's question.
	answerType   string
	bookQuestion string
}

func (r *raise) Error() string { return r.msg }

func missing(fact string) *raise {
	return &raise{group: GroupMissingValues, msg: "Please provide " + fact, fact: fact}
}

func userErr(format string, args ...any) *raise {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasPrefix(msg, "Could not") && !strings.HasPrefix(msg, "I don't know how to") {
		msg = "Could not " + msg
	}
	return &raise{group: GroupUserSystemError, msg: msg}
}

func internalErr(format string, args ...any) *raise {
	return &raise{group: GroupInternalError, msg: "Internal error: " + fmt.Sprintf(format, args...)}
}
