package sqlite

import (
	"database/sql/driver"
	"fmt"

	"github.com/cockroachdb/apd/v3"
	"modernc.org/sqlite"
)

// The exact decimal arithmetic of the insights' money (migration 00032:
// run_aggregates.saved_usd is decimal text), for the triggers and the
// reads, registered on every connection of the "sqlite" driver:
//
//	prose_dec_add(a, b, n)  a + b × n (b NULL or n NULL: a)
//	prose_dec_sum(x, w)     Σ x × w, aggregate; '0' over no rows
//
// PostgreSQL computes the same with NUMERIC.
func init() {
	if err := sqlite.RegisterDeterministicScalarFunction("prose_dec_add", 3, decAdd); err != nil {
		panic(err)
	}
	if err := sqlite.RegisterFunction("prose_dec_sum", &sqlite.FunctionImpl{NArgs: 2, Deterministic: true,
		MakeAggregate: func(sqlite.FunctionContext) (sqlite.AggregateFunction, error) { return &decSum{}, nil }}); err != nil {
		panic(err)
	}
}

// decCtx: 80 digits hold any sum of costs of 30 digits times run counts.
var decCtx = apd.BaseContext.WithPrecision(80)

// decOf reads a decimal argument (text, integer or NULL: ok false).
func decOf(v driver.Value) (*apd.Decimal, bool, error) {
	switch x := v.(type) {
	case nil:
		return nil, false, nil
	case int64:
		return apd.New(x, 0), true, nil
	case string:
		d, _, err := apd.NewFromString(x)
		if err != nil {
			return nil, false, fmt.Errorf("prose decimal %q: %w", x, err)
		}
		return d, true, nil
	case []byte:
		return decOf(string(x))
	default:
		return nil, false, fmt.Errorf("prose decimal: unexpected %T", v)
	}
}

func decAdd(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	a, ok, err := decOf(args[0])
	if err != nil || !ok {
		return args[0], err
	}
	b, okb, err := decOf(args[1])
	if err != nil {
		return nil, err
	}
	n, okn := args[2].(int64)
	if !okb || !okn || n == 0 {
		return a.Text('f'), nil
	}
	var p, out apd.Decimal
	if _, err := decCtx.Mul(&p, b, apd.New(n, 0)); err != nil {
		return nil, err
	}
	if _, err := decCtx.Add(&out, a, &p); err != nil {
		return nil, err
	}
	return out.Text('f'), nil
}

// decSum is prose_dec_sum's state.
type decSum struct{ sum apd.Decimal }

func (s *decSum) Step(_ *sqlite.FunctionContext, args []driver.Value) error {
	x, ok, err := decOf(args[0])
	if err != nil || !ok {
		return err
	}
	w, ok := args[1].(int64)
	if !ok {
		return nil
	}
	if _, err := decCtx.Mul(x, x, apd.New(w, 0)); err != nil {
		return err
	}
	_, err = decCtx.Add(&s.sum, &s.sum, x)
	return err
}

func (s *decSum) WindowInverse(*sqlite.FunctionContext, []driver.Value) error {
	return fmt.Errorf("prose_dec_sum is not a window function")
}

func (s *decSum) WindowValue(*sqlite.FunctionContext) (driver.Value, error) {
	return s.sum.Text('f'), nil
}

func (s *decSum) Final(*sqlite.FunctionContext) {}
