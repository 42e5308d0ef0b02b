package server

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/server/transport"
	"github.com/proserun/prose/store"
)

// Limits of a trigger instance's filter_expression.
const (
	MaxFilterNodes = 200 // expressions in one filter
	MaxFilterDepth = 32  // nesting
)

// checkFilter validates a filter_expression: every expression sets one
// member, operators are known, binary expressions have both operands and
// unary ones their operand, values are null, text, number, boolean or lists
// of these, paths name at least one member, and the whole is at most
// MaxFilterNodes expressions nested at most MaxFilterDepth deep. field is the
// path of the expression for the error.
func checkFilter(x *platformv1.Expression) error {
	nodes := 0
	var walk func(x *platformv1.Expression, field string, depth int) error
	bad := func(field, msg string) error {
		return transport.InvalidArgument(ReasonInvalidTrigger, field+": "+msg, transport.Violation(field, msg))
	}
	walk = func(x *platformv1.Expression, field string, depth int) error {
		nodes++
		if nodes > MaxFilterNodes {
			return bad("filter_expression", fmt.Sprintf("more than %d expressions", MaxFilterNodes))
		}
		if depth > MaxFilterDepth {
			return bad(field, fmt.Sprintf("nested more than %d deep", MaxFilterDepth))
		}
		switch k := x.GetKind().(type) {
		case *platformv1.Expression_BinaryExpression:
			b := k.BinaryExpression
			if _, ok := platformv1.BinaryOperator_name[int32(b.GetOperator())]; !ok {
				return bad(field+".binary_expression.operator", "unknown operator")
			}
			if b.GetLeft() == nil || b.GetRight() == nil {
				return bad(field+".binary_expression", "needs left and right")
			}
			if err := walk(b.GetLeft(), field+".binary_expression.left", depth+1); err != nil {
				return err
			}
			return walk(b.GetRight(), field+".binary_expression.right", depth+1)
		case *platformv1.Expression_UnaryExpression:
			u := k.UnaryExpression
			if _, ok := platformv1.UnaryOperator_name[int32(u.GetOperator())]; !ok {
				return bad(field+".unary_expression.operator", "unknown operator")
			}
			if u.GetInner() == nil {
				return bad(field+".unary_expression", "needs inner")
			}
			return walk(u.GetInner(), field+".unary_expression.inner", depth+1)
		case *platformv1.Expression_ValueExpression:
			if _, err := filterLiteral(k.ValueExpression); err != nil {
				return bad(field+".value_expression", err.Error())
			}
			return nil
		case *platformv1.Expression_NounPhrasesExpression:
			if len(k.NounPhrasesExpression.GetNounPhrases()) == 0 {
				return bad(field+".noun_phrases_expression", "names no member")
			}
			for i, p := range k.NounPhrasesExpression.GetNounPhrases() {
				if nounKey(p) == "" {
					return bad(fmt.Sprintf("%s.noun_phrases_expression.noun_phrases.%d", field, i), "empty noun phrase")
				}
			}
			return nil
		default:
			return bad(field, "sets none of binary_expression, unary_expression, value_expression, noun_phrases_expression")
		}
	}
	return walk(x, "filter_expression", 1)
}

// nounKey is the member name a noun phrase names: modifiers and head
// joined by spaces.
func nounKey(p *platformv1.NounPhrase) string {
	return strings.TrimSpace(strings.Join(append(append([]string(nil), p.GetModifiers()...), p.GetHead()), " "))
}

// filterLiteral converts a value_expression to the filter's values: nil,
// string, float64, bool, []any.
func filterLiteral(v *platformv1.BdkValue) (any, error) {
	switch k := v.GetKind().(type) {
	case *platformv1.BdkValue_NullValue:
		return nil, nil
	case *platformv1.BdkValue_TextValue:
		return k.TextValue, nil
	case *platformv1.BdkValue_NumberValue:
		return k.NumberValue, nil
	case *platformv1.BdkValue_BooleanValue:
		return k.BooleanValue, nil
	case *platformv1.BdkValue_ListValue:
		out := make([]any, 0, len(k.ListValue.GetValues()))
		for _, e := range k.ListValue.GetValues() {
			x, err := filterLiteral(e)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("a filter value is null_value, text_value, number_value, boolean_value or list_value")
	}
}

// instanceFilter reads a stored instance's filter (nil: none).
func instanceFilter(inst store.TriggerInstance) (*platformv1.Expression, error) {
	cfg, err := decodeTriggerConfig(inst.Configuration)
	if err != nil {
		return nil, fmt.Errorf("decode trigger instance %s: %w", inst.ID, err)
	}
	return cfg.GetFilterExpression(), nil
}

// filterMatches says whether an event's body matches a filter: the filter
// must evaluate to true. A path that finds nothing is absent: comparisons
// with it are false (NotEquals true), Exists false; operands of different
// kinds are not equal and not ordered.
func filterMatches(x *platformv1.Expression, doc any) bool {
	v, _ := evalFilter(x, doc)
	b, ok := v.(bool)
	return ok && b
}

// evalFilter evaluates an expression; ok is false when a path found nothing.
func evalFilter(x *platformv1.Expression, doc any) (any, bool) {
	switch k := x.GetKind().(type) {
	case *platformv1.Expression_ValueExpression:
		v, err := filterLiteral(k.ValueExpression)
		return v, err == nil
	case *platformv1.Expression_NounPhrasesExpression:
		cur := doc
		for _, p := range k.NounPhrasesExpression.GetNounPhrases() {
			obj, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = obj[nounKey(p)]; !ok {
				return nil, false
			}
		}
		return normalize(cur), true
	case *platformv1.Expression_UnaryExpression:
		v, found := evalFilter(k.UnaryExpression.GetInner(), doc)
		if k.UnaryExpression.GetOperator() == platformv1.UnaryOperator_UnaryOperatorExists {
			return found, true
		}
		b, ok := v.(bool)
		return ok && !b, true
	case *platformv1.Expression_BinaryExpression:
		b := k.BinaryExpression
		op := b.GetOperator()
		l, lok := evalFilter(b.GetLeft(), doc)
		switch op {
		case platformv1.BinaryOperator_BinaryOperatorAnd:
			if lb, _ := l.(bool); !lb {
				return false, true
			}
			r, _ := evalFilter(b.GetRight(), doc)
			rb, _ := r.(bool)
			return rb, true
		case platformv1.BinaryOperator_BinaryOperatorOr:
			if lb, _ := l.(bool); lb {
				return true, true
			}
			r, _ := evalFilter(b.GetRight(), doc)
			rb, _ := r.(bool)
			return rb, true
		}
		r, rok := evalFilter(b.GetRight(), doc)
		if !lok || !rok {
			return op == platformv1.BinaryOperator_BinaryOperatorNotEquals, true
		}
		switch op {
		case platformv1.BinaryOperator_BinaryOperatorEquals:
			return filterEqual(l, r), true
		case platformv1.BinaryOperator_BinaryOperatorNotEquals:
			return !filterEqual(l, r), true
		case platformv1.BinaryOperator_BinaryOperatorIn:
			return has(r, l), true
		case platformv1.BinaryOperator_BinaryOperatorHas:
			return has(l, r), true
		default:
			c, ok := compare(l, r)
			if !ok {
				return false, true
			}
			switch op {
			case platformv1.BinaryOperator_BinaryOperatorLessThan:
				return c < 0, true
			case platformv1.BinaryOperator_BinaryOperatorGreaterThan:
				return c > 0, true
			case platformv1.BinaryOperator_BinaryOperatorLessThanOrEqual:
				return c <= 0, true
			case platformv1.BinaryOperator_BinaryOperatorGreaterThanOrEqual:
				return c >= 0, true
			}
		}
	}
	return nil, false
}

// normalize makes JSON numbers float64 (lists and objects element-wise
// when compared).
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return math.NaN()
		}
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

func filterEqual(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !filterEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		return false // objects are not compared
	case nil, string, float64, bool:
		if _, isMap := b.(map[string]any); isMap {
			return false
		}
		if _, isList := b.([]any); isList {
			return false
		}
		return a == b
	}
	return false
}

// has: a list has an element equal to e, or a text contains the text e.
func has(container, e any) bool {
	switch c := container.(type) {
	case []any:
		for _, x := range c {
			if filterEqual(normalize(x), e) {
				return true
			}
		}
	case string:
		s, ok := e.(string)
		return ok && strings.Contains(c, s)
	}
	return false
}

// compare orders two numbers or two texts.
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok || math.IsNaN(x) || math.IsNaN(y) {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}
