package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/pressly/goose/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Migration 00014 moves what runs keep off the public API's messages onto
// the private prose.persist.v1 ones (see proto/internal/prose/persist/v1). The
// shapes were chosen so that only one column changes on disk:
//
//   - runs.resolution was a prose.platform.v1.ResolveExceptionRequest
//     (guidance in fields 4-8, ids cleared); it becomes a
//     prose.persist.v1.Guidance (fields 1-5) and is rewritten here;
//   - runs.steps (ExecutableSteps), runs.user_inputs, runs.step_inputs and
//     run_journal.data (ExecutableSteps' inputs map), runs.outputs
//     (CompletedRunState) and runs.invocation_details (InvocationDetails)
//     have the same encoding as persist.v1's Steps, Values and Invocation,
//     whose field numbers were kept: they read back as they are.
//
// The old shape is read here by its field numbers, frozen as they were
// when the rows were written, not with the public message (which may
// change): a change to the public protos is never a data migration.

// GoMigrations are the migrations of both backends written in Go.
func GoMigrations(d store.Dialect) []*goose.Migration {
	return []*goose.Migration{
		TitleKeyMigration(d),
		goose.NewGoMigration(14,
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
				return rewriteResolutions(ctx, tx, d, GuidanceFromV13)
			}},
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
				return rewriteResolutions(ctx, tx, d, GuidanceToV13)
			}}),
		migration00022(d),
	}
}

// rewriteResolutions rewrites every kept resolution with conv.
func rewriteResolutions(ctx context.Context, tx *sql.Tx, d store.Dialect, conv func([]byte) ([]byte, error)) error {
	return rewriteColumn(ctx, tx, d, "runs", "resolution", []string{"id"}, conv)
}

// The field numbers of prose.platform.v1.ResolveExceptionRequest and its
// guidance messages as of migration 00013.
const (
	v13ProvideValues = 4 // ProvideValues{map<string, Value> values = 1}
	v13Skip          = 5 // Skip{}
	v13Retry         = 6 // Retry{}
	v13ReplaceStep   = 7 // ReplaceStep{string code = 1}
	v13Answer        = 8 // Answer{Value value = 1}
)

var errNoGuidance = errors.New("no guidance kept")

// GuidanceFromV13 converts a resolution kept as a
// prose.platform.v1.ResolveExceptionRequest to a prose.persist.v1.Guidance
// (the values, whose encoding persist.v1.Value mirrors, are kept byte for
// byte and checked to decode).
func GuidanceFromV13(b []byte) ([]byte, error) {
	g := &persistv1.Guidance{}
	err := wireFields(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case typ != protowire.BytesType:
			return nil // the ids (strings) or unknown: not guidance
		case num == v13ProvideValues:
			vals := &persistv1.Values{}
			if err := proto.Unmarshal(v, vals); err != nil {
				return err
			}
			g.Kind = &persistv1.Guidance_ProvideValues{ProvideValues: vals}
		case num == v13Skip:
			g.Kind = &persistv1.Guidance_Skip{Skip: true}
		case num == v13Retry:
			g.Kind = &persistv1.Guidance_Retry{Retry: true}
		case num == v13ReplaceStep:
			code := ""
			if err := wireFields(v, func(n protowire.Number, t protowire.Type, s []byte) error {
				if n == 1 && t == protowire.BytesType {
					code = string(s)
				}
				return nil
			}); err != nil {
				return err
			}
			g.Kind = &persistv1.Guidance_ReplaceStep{ReplaceStep: code}
		case num == v13Answer:
			val := &persistv1.Value{}
			if err := wireFields(v, func(n protowire.Number, t protowire.Type, s []byte) error {
				if n == 1 && t == protowire.BytesType {
					return proto.Unmarshal(s, val)
				}
				return nil
			}); err != nil {
				return err
			}
			g.Kind = &persistv1.Guidance_Answer{Answer: val}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if g.Kind == nil {
		return nil, errNoGuidance
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(g)
}

// GuidanceToV13 converts back (the down migration).
func GuidanceToV13(b []byte) ([]byte, error) {
	g := &persistv1.Guidance{}
	if err := proto.Unmarshal(b, g); err != nil {
		return nil, err
	}
	det := proto.MarshalOptions{Deterministic: true}
	var out []byte
	switch k := g.GetKind().(type) {
	case *persistv1.Guidance_ProvideValues:
		v, err := det.Marshal(k.ProvideValues)
		if err != nil {
			return nil, err
		}
		out = protowire.AppendBytes(protowire.AppendTag(out, v13ProvideValues, protowire.BytesType), v)
	case *persistv1.Guidance_Skip:
		out = protowire.AppendBytes(protowire.AppendTag(out, v13Skip, protowire.BytesType), nil)
	case *persistv1.Guidance_Retry:
		out = protowire.AppendBytes(protowire.AppendTag(out, v13Retry, protowire.BytesType), nil)
	case *persistv1.Guidance_ReplaceStep:
		var in []byte
		if k.ReplaceStep != "" {
			in = protowire.AppendString(protowire.AppendTag(in, 1, protowire.BytesType), k.ReplaceStep)
		}
		out = protowire.AppendBytes(protowire.AppendTag(out, v13ReplaceStep, protowire.BytesType), in)
	case *persistv1.Guidance_Answer:
		v, err := det.Marshal(k.Answer)
		if err != nil {
			return nil, err
		}
		in := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), v)
		out = protowire.AppendBytes(protowire.AppendTag(out, v13Answer, protowire.BytesType), in)
	default:
		return nil, errNoGuidance
	}
	return out, nil
}

// wireFields calls fn for each top-level field of an encoded message (v is a
// length-delimited field's content; nil for other types).
func wireFields(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}
