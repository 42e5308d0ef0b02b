package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

// The reference's schemas and the served OpenAPI document's definitions
// walked side by side, from the 200 answer of one operation in both: the
// served document names its definitions after Prose's protos (v1Book,
// platformV1Run), the reference after the platform's (v2BookDescriptor,
// v1Run), so the two are matched by where they are used, not by name.

// twin holds both documents' schemas.
type twin struct {
	ref    map[string]any // the reference's components.schemas
	served map[string]any // the served document's definitions
	doc    map[string]any // the served document
	// answered records, by "schema.field", whether an answer checked had
	// the field (false: the schema was met, the field never set).
	answered map[string]bool
}

// servedDoc is GET /openapi.json, decoded.
func servedDoc(t *testing.T, e *testEnv) map[string]any {
	t.Helper()
	resp, err := http.Get(e.Srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("/openapi.json: %v", err)
	}
	return doc
}

func newTwin(t *testing.T, served map[string]any) *twin {
	defs, _ := served["definitions"].(map[string]any)
	return &twin{ref: referenceSchemas(t), served: defs, doc: served}
}

// seedSchemas are the reference's schemas the seeds (the source of truth
// where they differ) replace: a procedure's questions are "array of
// Concept" in the seeds, the reference's v2QuestionDescriptor has only two
// of a concept's fields.
var seedSchemas = map[string]string{"v2QuestionDescriptor": "v2ConceptDescriptor"}

// resolveRef is resolve in the reference, with seedSchemas applied.
func (w *twin) resolveRef(s map[string]any) (map[string]any, string) {
	s, name := resolve(s, w.ref)
	if seed, ok := seedSchemas[name]; ok {
		s, _ = w.ref[seed].(map[string]any)
		name = seed
	}
	return s, name
}

// resolve follows $ref in one document; name is the schema's name ("" for
// an inline schema).
func resolve(s map[string]any, defs map[string]any) (map[string]any, string) {
	name := ""
	for s != nil {
		ref, ok := s["$ref"].(string)
		if !ok {
			break
		}
		name = ref[strings.LastIndexByte(ref, '/')+1:]
		s, _ = defs[name].(map[string]any)
	}
	return s, name
}

// jsonType is the JSON type a schema gives its values ("" for any).
func jsonType(s map[string]any) string {
	if typ, _ := s["type"].(string); typ != "" {
		return typ
	}
	if s["properties"] != nil || s["additionalProperties"] != nil {
		return "object"
	}
	return ""
}

func props(s map[string]any) map[string]any {
	p, _ := s["properties"].(map[string]any)
	return p
}

func marked(p any) bool {
	m, _ := p.(map[string]any)
	return m["x-prose-extension"] == true
}

// answer reports every place where v (a decoded JSON answer) does not fit
// the reference's schema rs: a field the reference does not have (unless
// the served schema ss marks it an extension), a value of another JSON
// type, an enum value it does not list, a required field left out.
func (w *twin) answer(rs, ss map[string]any, v any, at string) []string {
	rs, rn := w.resolveRef(rs)
	ss, _ = resolve(ss, w.served)
	if rs == nil {
		return []string{at + ": no schema in the reference"}
	}
	switch typ := jsonType(rs); typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", at, v)}
		}
		return w.object(rs, ss, m, at, rn)
	case "array":
		l, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", at, v)}
		}
		ri, _ := rs["items"].(map[string]any)
		si, _ := ss["items"].(map[string]any)
		var out []string
		for i, x := range l {
			out = append(out, w.answer(ri, si, x, fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	case "string":
		s, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want a string", at, v)}
		}
		if enum, ok := rs["enum"].([]any); ok && !slices.Contains(enum, any(s)) {
			return []string{fmt.Sprintf("%s: %q is not one of %v", at, s, enum)}
		}
	case "integer", "number":
		if _, ok := v.(float64); !ok {
			return []string{fmt.Sprintf("%s: %T, want a JSON number", at, v)}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return []string{fmt.Sprintf("%s: %T, want a boolean", at, v)}
		}
	}
	return nil
}

func (w *twin) object(rs, ss map[string]any, m map[string]any, at string, name string) []string {
	var out []string
	if w.answered != nil && name != "" {
		for k := range props(rs) {
			w.answered[name+"."+k] = w.answered[name+"."+k] || m[k] != nil
		}
	}
	rp, sp := props(rs), props(ss)
	ra, _ := rs["additionalProperties"].(map[string]any)
	sa, _ := ss["additionalProperties"].(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		sub, _ := sp[k].(map[string]any)
		switch p, ok := rp[k].(map[string]any); {
		case ok:
			out = append(out, w.answer(p, sub, m[k], at+"."+k)...)
		case ra != nil:
			out = append(out, w.answer(ra, sa, m[k], at+"."+k)...)
		case marked(sp[k]):
			// A Prose extension, marked in the served document.
		default:
			out = append(out, at+"."+k+": not in the reference's schema (nor marked x-prose-extension)")
		}
	}
	req, _ := rs["required"].([]any)
	for _, r := range req {
		name := fmt.Sprint(r)
		if _, ok := m[name]; !ok && !isReadOnly(rp, name) {
			out = append(out, at+"."+name+": required by the reference")
		}
	}
	return out
}

// document reports where the served schema ss of an operation's answer
// differs from the reference's rs: a property the reference does not have
// and that is not marked, a property of another JSON type or string format,
// an enum value the reference does not list, a property the reference
// requires that the served schema lacks. seen stops cycles.
func (w *twin) document(rs, ss map[string]any, at string, seen map[string]bool) []string {
	rs, rn := w.resolveRef(rs)
	ss, sn := resolve(ss, w.served)
	if rs == nil || ss == nil {
		if rs == nil && ss == nil {
			return nil
		}
		return []string{fmt.Sprintf("%s: reference %s %v, served %s %v", at, rn, rs != nil, sn, ss != nil)}
	}
	if key := rn + "|" + sn; rn != "" && sn != "" {
		if seen[key] {
			return nil
		}
		seen[key] = true
	}
	rt, st := jsonType(rs), jsonType(ss)
	if rt != st && rt != "" {
		return []string{fmt.Sprintf("%s: the reference's %s is %q, the served %s %q", at, rn, rt, sn, st)}
	}
	var out []string
	switch rt {
	case "string":
		rf, _ := rs["format"].(string)
		sf, _ := ss["format"].(string)
		if rf != sf && (slices.Contains(stringFormats, rf) || slices.Contains(stringFormats, sf)) {
			out = append(out, fmt.Sprintf("%s: format %q in the reference, %q served", at, rf, sf))
		}
		re, _ := rs["enum"].([]any)
		se, _ := ss["enum"].([]any)
		for _, v := range se {
			if re != nil && !slices.Contains(re, v) {
				out = append(out, fmt.Sprintf("%s: the served enum %s has %v, the reference's %s has not", at, sn, v, rn))
			}
		}
	case "array":
		ri, _ := rs["items"].(map[string]any)
		si, _ := ss["items"].(map[string]any)
		out = append(out, w.document(ri, si, at+"[]", seen)...)
	case "object":
		out = append(out, w.documentObject(rs, ss, rn, sn, at, seen)...)
	}
	return out
}

// stringFormats are the string formats whose JSON differs: an int64 is a
// decimal string, bytes are base64, a date-time is RFC 3339.
var stringFormats = []string{"int64", "uint64", "byte", "date-time"}

func (w *twin) documentObject(rs, ss map[string]any, rn, sn, at string, seen map[string]bool) []string {
	var out []string
	rp, sp := props(rs), props(ss)
	names := make([]string, 0, len(sp))
	for k := range sp {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		r, ok := rp[k].(map[string]any)
		switch {
		case ok && marked(sp[k]):
			out = append(out, fmt.Sprintf("%s.%s: marked x-prose-extension in %s but in the reference's %s", at, k, sn, rn))
		case ok:
			s, _ := sp[k].(map[string]any)
			out = append(out, w.document(r, s, at+"."+k, seen)...)
		case !marked(sp[k]) && rs["additionalProperties"] == nil:
			out = append(out, fmt.Sprintf("%s.%s: served in %s, not in the reference's %s, not marked x-prose-extension", at, k, sn, rn))
		}
	}
	ra, _ := rs["additionalProperties"].(map[string]any)
	sa, _ := ss["additionalProperties"].(map[string]any)
	if ra != nil && sa != nil {
		out = append(out, w.document(ra, sa, at+".*", seen)...)
	}
	req, _ := rs["required"].([]any)
	for _, r := range req {
		if _, ok := sp[fmt.Sprint(r)]; !ok {
			out = append(out, fmt.Sprintf("%s.%v: required by the reference's %s, not in the served %s", at, r, rn, sn))
		}
	}
	return out
}

// answerSchemas are the schemas of op's 200 answer in the reference and in
// the served document (nil where the answer is not JSON).
func answerSchemas(t *testing.T, op refOp, served map[string]any) (rs, ss map[string]any) {
	t.Helper()
	paths, _ := referenceDoc(t)["paths"].(map[string]any)
	o, _ := testenv.Field(paths[op.Template], strings.ToLower(op.Method)).(map[string]any)
	content, _ := testenv.Field(o, "responses.200.content").(map[string]any)
	rs, _ = testenv.Field(content["application/json"], "schema").(map[string]any)
	sp, _ := served["paths"].(map[string]any)
	for tmpl, raw := range sp {
		if anyPathVar.ReplaceAllString(tmpl, "{}") != anyPathVar.ReplaceAllString(op.Template, "{}") {
			continue
		}
		ss, _ = testenv.Field(raw, strings.ToLower(op.Method)+".responses.200.schema").(map[string]any)
	}
	return rs, ss
}
