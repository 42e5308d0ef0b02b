package engine

import (
	"context"
	"strconv"

	"github.com/proserun/prose/internal/lang"
)

type callIDKey struct{}

// CallID is the identity of the book call being made with ctx, when the
// engine makes it: "{run id}/{step}/{journal index}". It is the same when the
// call is repeated after a crash (its result was not journaled), so an
// external book can answer a repeated call id with its first answer (the
// Idempotency-Key of the book protocol). "" outside a book call.
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}

func withCallID(ctx context.Context, run string, step, idx int) context.Context {
	return context.WithValue(ctx, callIDKey{}, run+"/"+strconv.Itoa(step)+"/"+strconv.Itoa(idx))
}

// CallKey is the journal's key of a book call: the procedure and a hash of
// its inputs (after "#"). A replay checks with it that a draft makes a
// recorded call with the inputs the run gave it.
func CallKey(proc lang.BookProcedure, inputs map[string]lang.Value) (string, error) {
	return callKey(proc, inputs)
}
