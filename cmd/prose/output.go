package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/itchyny/gojq"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/proserun/prose/client"
	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
)

// The machine-readable outputs (-o json, -o yaml, --jq) print values as
// people write them (120.50, "2026-01-31", lists, tables as lists of rows,
// files as their name and link), not the API's Value messages
// ({"number":{"lo":12050,"flags":131072}}); --raw prints the API's JSON as
// it travels, for scripts that feed it back to the API.

// valueName is the API's Value message, the one shape plainDoc rewrites.
const valueName protoreflect.FullName = "prose.platform.v1.Value"

// outputFormats are the values -o takes.
var outputFormats = []string{"table", "json", "yaml"}

// checkOutput validates -o and compiles --jq before any connection, so a
// mistake in either is a usage error (exit 2) that costs no round trip.
func (f *clientFlags) checkOutput() (*gojq.Code, error) {
	ok := false
	for _, o := range outputFormats {
		ok = ok || f.output == o
	}
	if !ok {
		return nil, usageErr("-o must be table, json or yaml, not %q", f.output)
	}
	if f.jq == "" {
		return nil, nil
	}
	q, err := gojq.Parse(f.jq)
	if err != nil {
		return nil, usageErr("--jq: %v", err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usageErr("--jq: %v", err)
	}
	return code, nil
}

// plainDoc is m as a generic JSON document (maps, slices, json.Number,
// strings, bools) with every Value in it replaced by its plain form; raw
// keeps the API's form.
func plainDoc(m proto.Message, raw bool) (any, error) {
	if raw {
		b, err := jsonOut.Marshal(m)
		if err != nil {
			return nil, err
		}
		return decodeDoc(b)
	}
	return plainOf(m.ProtoReflect())
}

func plainOf(m protoreflect.Message) (any, error) {
	if m.Descriptor().FullName() == valueName {
		v, _ := m.Interface().(*platformv1.Value)
		b, err := client.PlainJSON(v)
		if err != nil {
			return nil, err
		}
		return decodeDoc(b)
	}
	b, err := jsonOut.Marshal(m.Interface())
	if err != nil {
		return nil, err
	}
	doc, err := decodeDoc(b)
	if err != nil {
		return nil, err
	}
	obj, isObj := doc.(map[string]any)
	// The well-known types (timestamps, durations, structs) have their own
	// JSON forms and hold no Value.
	if !isObj || strings.HasPrefix(string(m.Descriptor().FullName()), "google.") {
		return doc, nil
	}
	var rerr error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() == nil {
				return true
			}
			out := map[string]any{}
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				var p any
				p, rerr = plainOf(mv.Message())
				out[k.String()] = p
				return rerr == nil
			})
			obj[name] = out
		case fd.IsList():
			if fd.Message() == nil {
				return true
			}
			l := v.List()
			out := make([]any, l.Len())
			for i := range out {
				if out[i], rerr = plainOf(l.Get(i).Message()); rerr != nil {
					return false
				}
			}
			obj[name] = out
		case fd.Message() != nil:
			obj[name], rerr = plainOf(v.Message())
		}
		return rerr == nil
	})
	return obj, rerr
}

func decodeDoc(b []byte) (any, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// emit prints a machine-readable document: the results of --jq when it is
// given (text results bare, as `jq -r` and `gh --jq` print them), else the
// document as one line of JSON or as YAML.
func (s *session) emit(doc any) error {
	if s.jq == nil {
		return s.write(doc)
	}
	iter := s.jq.Run(doc)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, ok := v.(error); ok {
			return &exitError{code: exitFailed, err: fmt.Errorf("--jq: %w", err)}
		}
		if t, ok := v.(string); ok && s.format != "yaml" {
			fmt.Fprintln(s.out, t)
			continue
		}
		if err := s.write(v); err != nil {
			return err
		}
	}
}

func (s *session) write(doc any) error {
	if s.format == "yaml" {
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(yamlNode(doc)); err != nil {
			return &exitError{code: exitFailed, err: err}
		}
		_ = enc.Close()
		fmt.Fprint(s.out, "---\n"+buf.String())
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	_, _ = s.out.Write(buf.Bytes())
	return nil
}

// yamlNode builds the YAML of a JSON document by hand: encoding a
// json.Number directly would go through float64 and print 120.5 for
// 120.50, and maps would lose a stable order.
func yamlNode(doc any) *yaml.Node {
	switch v := doc.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(v)}
	case json.Number:
		tag := "!!float"
		if _, err := v.Int64(); err == nil {
			tag = "!!int"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v.String()}
	case int, int64, float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(v)}
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
	case []any:
		n := &yaml.Node{Kind: yaml.SequenceNode}
		for _, it := range v {
			n.Content = append(n.Content, yamlNode(it))
		}
		return n
	case map[string]any:
		n := &yaml.Node{Kind: yaml.MappingNode}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: k}, yamlNode(v[k]))
		}
		return n
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Value: fmt.Sprint(doc)}
}

// plainText is how a table shows a plain JSON value: text bare, numbers
// with their digits, a file as its link, a table (a list of rows) as an
// indented table on the lines that follow, anything else as compact JSON.
func plainText(raw json.RawMessage, indent string) string {
	doc, err := decodeDoc(raw)
	if err != nil {
		return string(raw)
	}
	switch v := doc.(type) {
	case map[string]any:
		if u, ok := v["url"].(string); ok && v["file_name"] != nil {
			if u == "" {
				return fmt.Sprint(v["file_name"])
			}
			return u
		}
	case []any:
		if t := tableText(v, indent+"  "); t != "" {
			return "\n" + t
		}
	}
	return string(raw)
}

// tableText renders a list of rows with the same columns as an aligned
// table; "" when the list is not one.
func tableText(rows []any, indent string) string {
	if len(rows) == 0 {
		return ""
	}
	first, ok := rows[0].(map[string]any)
	if !ok || len(first) == 0 {
		return ""
	}
	cols := make([]string, 0, len(first))
	for k := range first {
		cols = append(cols, k)
	}
	sort.Strings(cols)
	cells := [][]string{cols}
	for _, r := range rows {
		m, ok := r.(map[string]any)
		if !ok || len(m) != len(cols) {
			return ""
		}
		line := make([]string, len(cols))
		for i, c := range cols {
			cv, ok := m[c]
			if !ok {
				return ""
			}
			if t, isText := cv.(string); isText {
				line[i] = t
			} else {
				b, _ := json.Marshal(cv)
				line[i] = string(b)
			}
		}
		cells = append(cells, line)
	}
	widths := make([]int, len(cols))
	for _, l := range cells {
		for i, c := range l {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, l := range cells {
		b.WriteString(indent)
		for i, c := range l {
			if i < len(l)-1 {
				c += strings.Repeat(" ", widths[i]-len([]rune(c))+2)
			}
			b.WriteString(c)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
