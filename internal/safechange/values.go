package safechange

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/proserun/prose/internal/lang"
)

// Values in a tests file are written as people write them: `120.50` is the
// exact number 120.50 (never a float), `2024-05-01` a date,
// `2024-05-01T09:00:00Z` a datetime, `true`/`false` booleans, `null`
// nothing, anything else text (quote it to keep `"12"` text). Kinds YAML
// has no plain form for take a tag: `!time 10:30`, `!duration PT2H`,
// `!timezone Europe/Paris`, `!set [a, b]`, `!table [{…}, {…}]` (rows),
// `!file {file_name: a.pdf, url: https://…}`; `!date`, `!datetime`,
// `!number` and `!text` say a kind outright.

// maxNodes bounds the YAML nodes one value may expand to (aliases
// included), so that a small file cannot make a huge value.
const maxNodes = 100_000

// valueReader reads values, counting the nodes it expands.
type valueReader struct{ nodes int }

func (r *valueReader) value(n *yaml.Node, depth int) (lang.Value, error) {
	r.nodes++
	if r.nodes > maxNodes {
		return lang.Value{}, fmt.Errorf("the value expands to more than %d YAML nodes", maxNodes)
	}
	if depth > 64 {
		return lang.Value{}, errors.New("the value is nested more than 64 deep")
	}
	switch n.Kind {
	case yaml.AliasNode:
		return r.value(n.Alias, depth+1)
	case yaml.SequenceNode:
		items := make([]lang.Value, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := r.value(c, depth+1)
			if err != nil {
				return lang.Value{}, err
			}
			items = append(items, v)
		}
		return r.tagged(n, lang.ListValue(items...))
	case yaml.MappingNode:
		d := lang.NewDictionary()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				return lang.Value{}, fmt.Errorf("line %d: a dictionary's key is a word or a text", k.Line)
			}
			v, err := r.value(n.Content[i+1], depth+1)
			if err != nil {
				return lang.Value{}, err
			}
			d.SetText(k.Value, v)
		}
		return r.tagged(n, lang.DictValue(d))
	case yaml.ScalarNode:
		return scalar(n)
	}
	return lang.Value{}, fmt.Errorf("line %d: not a value", n.Line)
}

// tagged applies a collection's tag (!set, !table, !file).
func (r *valueReader) tagged(n *yaml.Node, v lang.Value) (lang.Value, error) {
	switch n.Tag {
	case "", "!!seq", "!!map", "!":
		return v, nil
	case "!set":
		if v.Kind() != lang.KindList {
			return lang.Value{}, fmt.Errorf("line %d: !set takes a list", n.Line)
		}
		s := lang.NewSet()
		for _, it := range v.AsList().Items {
			if _, err := s.Add(it); err != nil {
				return lang.Value{}, fmt.Errorf("line %d: %w", n.Line, err)
			}
		}
		return lang.SetValue(s), nil
	case "!table":
		if v.Kind() != lang.KindList {
			return lang.Value{}, fmt.Errorf("line %d: !table takes a list of rows", n.Line)
		}
		t := &lang.Table{}
		for _, row := range v.AsList().Items {
			if row.Kind() != lang.KindDictionary {
				return lang.Value{}, fmt.Errorf("line %d: every row of a !table is a dictionary", n.Line)
			}
			t.AppendRow(row.AsDictionary())
		}
		return lang.TableValue(t), nil
	case "!file":
		if v.Kind() != lang.KindDictionary {
			return lang.Value{}, fmt.Errorf("line %d: !file takes {file_name, url}", n.Line)
		}
		f := &lang.File{}
		d := v.AsDictionary()
		for i := range d.Len() {
			k, val := d.Entry(i)
			switch k.AsText() {
			case "file_name":
				f.Name = val.AsText()
			case "url":
				f.URL = val.AsText()
			case "content":
				b, err := base64.StdEncoding.DecodeString(val.AsText())
				if err != nil {
					return lang.Value{}, fmt.Errorf("line %d: a !file's content is base64: %w", n.Line, err)
				}
				f.Content = b
			default:
				return lang.Value{}, fmt.Errorf("line %d: a !file has file_name, url and content, not %q", n.Line, k.AsText())
			}
		}
		return lang.FileValue(f), nil
	}
	return lang.Value{}, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
}

// scalar reads one scalar by its tag, written or resolved.
func scalar(n *yaml.Node) (lang.Value, error) {
	s := n.Value
	bad := func(what string) (lang.Value, error) {
		return lang.Value{}, fmt.Errorf("line %d: %q is not %s", n.Line, s, what)
	}
	typed := func(k lang.Kind, what string) (lang.Value, error) {
		v, ok := lang.ReadText(s, k)
		if !ok || v.Kind() != k {
			return bad(what)
		}
		return v, nil
	}
	tag := n.Tag
	if tag == "" || tag == "!" {
		tag = n.ShortTag()
	}
	switch tag {
	case "!!null":
		return lang.Null(), nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return bad("a boolean")
		}
		return lang.Bool(b), nil
	case "!!int", "!!float", "!number":
		num, err := lang.ParseNumber(strings.ReplaceAll(s, "_", ""))
		if err != nil {
			return bad("a number Prose reads exactly (quote it for text)")
		}
		return lang.Num(num), nil
	case "!!timestamp":
		if v, ok := lang.ReadText(s, lang.KindDate); ok {
			return v, nil
		}
		return typed(lang.KindDateTime, "a date or a datetime")
	case "!date":
		return typed(lang.KindDate, "a date (2024-05-01)")
	case "!datetime":
		return typed(lang.KindDateTime, "a datetime (2024-05-01T09:00:00Z)")
	case "!time":
		return typed(lang.KindTimeOfDay, "a time of day (10:30:00)")
	case "!duration":
		return typed(lang.KindDuration, "a duration (PT2H, 2 hours)")
	case "!timezone":
		return lang.TimeZoneValue(s), nil
	case "!!str", "!text":
		return lang.Text(s), nil
	}
	return lang.Value{}, fmt.Errorf("line %d: unknown tag %s", n.Line, n.Tag)
}

// valueNode writes v as a YAML node that reads back as v (see scalar).
func valueNode(v lang.Value) (*yaml.Node, error) { return valueNodeDepth(v, 0) }

func valueNodeDepth(v lang.Value, depth int) (*yaml.Node, error) {
	if depth > 64 {
		return nil, errors.New("the value is nested more than 64 deep")
	}
	plain := func(tag string) (*yaml.Node, error) {
		b, err := lang.AppendPlain(nil, v)
		if err != nil {
			return nil, err
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: strings.Trim(string(b), `"`)}, nil
	}
	switch v.Kind() {
	case lang.KindNull:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	case lang.KindBool:
		return plain("!!bool")
	case lang.KindNumber:
		n, err := plain("!!float")
		if err == nil && !strings.ContainsAny(n.Value, ".eE") {
			n.Tag = "!!int"
		}
		return n, err
	case lang.KindText:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v.AsText()}, nil
	case lang.KindDate:
		return plain("!!timestamp")
	case lang.KindDateTime:
		return plain("!datetime")
	case lang.KindTimeOfDay:
		return plain("!time")
	case lang.KindDuration:
		return plain("!duration")
	case lang.KindTimeZone:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!timezone", Value: v.AsText()}, nil
	case lang.KindList, lang.KindSet:
		items := v.AsList()
		var list []lang.Value
		tag := ""
		if items != nil {
			list = items.Items
		} else {
			list, tag = v.AsSet().Items(), "!set"
		}
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: tag, Style: yaml.FlowStyle}
		for _, it := range list {
			c, err := valueNodeDepth(it, depth+1)
			if err != nil {
				return nil, err
			}
			if c.Kind != yaml.ScalarNode {
				n.Style = 0
			}
			n.Content = append(n.Content, c)
		}
		return n, nil
	case lang.KindDictionary:
		return dictNode(v.AsDictionary(), depth)
	case lang.KindTable:
		t := v.AsTable()
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!table"}
		for i := range t.NumRows() {
			c, err := dictNode(t.Row(i), depth)
			if err != nil {
				return nil, err
			}
			c.Style = yaml.FlowStyle
			n.Content = append(n.Content, c)
		}
		return n, nil
	case lang.KindFile:
		f := v.AsFile()
		d := lang.NewDictionary()
		d.SetText("file_name", lang.Text(f.Name))
		d.SetText("url", lang.Text(f.URL))
		if len(f.Content) > 0 {
			d.SetText("content", lang.Text(base64.StdEncoding.EncodeToString(f.Content)))
		}
		n, err := dictNode(d, depth)
		if err != nil {
			return nil, err
		}
		n.Tag, n.Style = "!file", yaml.FlowStyle
		return n, nil
	}
	return nil, fmt.Errorf("a value of kind %s cannot be written", v.Kind())
}

func dictNode(d *lang.Dictionary, depth int) (*yaml.Node, error) {
	n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	for i := range d.Len() {
		k, val := d.Entry(i)
		c, err := valueNodeDepth(val, depth+1)
		if err != nil {
			return nil, err
		}
		if c.Kind != yaml.ScalarNode {
			n.Style = 0
		}
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k.String()}, c)
	}
	return n, nil
}

// sameValue reports whether got is the value want says: equal, or, for
// values of different kinds, the same plain form (a date and the text
// "2024-05-01" are the same value as people write them).
func sameValue(want, got lang.Value) bool {
	if lang.Equal(want, got) {
		return true
	}
	if want.Kind() == got.Kind() {
		return false
	}
	a, err1 := lang.AppendPlain(nil, want)
	b, err2 := lang.AppendPlain(nil, got)
	return err1 == nil && err2 == nil && string(a) == string(b)
}

// show writes a value for a person: its plain JSON form (texts quoted,
// numbers exact).
func show(v lang.Value) string {
	if !v.IsValid() {
		return "(nothing)"
	}
	b, err := lang.AppendPlain(nil, v)
	if err != nil {
		return v.String()
	}
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
