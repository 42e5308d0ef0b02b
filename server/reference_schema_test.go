package server_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proserun/prose/server/testenv"
)

// reference is the platform's public OpenAPI description
// (testdata/reference, read by referenceDoc).
type reference struct {
	doc map[string]any
}

func loadReference(t *testing.T) *reference {
	t.Helper()
	return &reference{doc: referenceDoc(t)}
}

func (r *reference) schema(name string) map[string]any {
	s, _ := testenv.Field(r.doc, "components.schemas."+name).(map[string]any)
	return s
}

// responseSchema is the schema of the 200 answer of an operation.
func (r *reference) responseSchema(t *testing.T, path, method string) map[string]any {
	t.Helper()
	paths, _ := r.doc["paths"].(map[string]any)
	op, _ := testenv.Field(paths[path], strings.ToLower(method)).(map[string]any)
	if op == nil {
		t.Fatalf("the reference has no %s %s", method, path)
	}
	ref, _ := testenv.Field(op, "responses.200.content.application/json.schema.$ref").(string)
	if ref == "" {
		// field splits at dots; the media type has none, so look it up by hand.
		resp, _ := testenv.Field(op, "responses.200.content").(map[string]any)
		ref, _ = testenv.Field(resp["application/json"], "schema.$ref").(string)
	}
	return r.deref(map[string]any{"$ref": ref})
}

func (r *reference) deref(s map[string]any) map[string]any {
	for {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		s = r.schema(strings.TrimPrefix(ref, "#/components/schemas/"))
	}
}

// check reports every place where v (decoded JSON) does not fit schema:
// fields the schema does not declare, values of another type, enum values
// it does not list.
func (r *reference) check(v any, schema map[string]any, at string) []string {
	s := r.deref(schema)
	if s == nil {
		return []string{at + ": no schema"}
	}
	var errs []string
	switch typ, _ := s["type"].(string); typ {
	case "object", "":
		m, ok := v.(map[string]any)
		if !ok {
			if typ == "" && s["properties"] == nil {
				return nil
			}
			return []string{fmt.Sprintf("%s: %T, want an object", at, v)}
		}
		props, _ := s["properties"].(map[string]any)
		extra, _ := s["additionalProperties"].(map[string]any)
		for k, fv := range m {
			if ps, ok := props[k].(map[string]any); ok {
				errs = append(errs, r.check(fv, ps, at+"."+k)...)
			} else if extra != nil {
				errs = append(errs, r.check(fv, extra, at+"."+k)...)
			} else {
				errs = append(errs, at+"."+k+": not in the reference's schema")
			}
		}
	case "array":
		l, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", at, v)}
		}
		items, _ := s["items"].(map[string]any)
		for i, it := range l {
			errs = append(errs, r.check(it, items, fmt.Sprintf("%s[%d]", at, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want a string", at, v)}
		}
		if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, any(str)) {
			errs = append(errs, fmt.Sprintf("%s: %q is not one of %v", at, str, enum))
		}
	case "number", "integer":
		if _, ok := v.(float64); !ok {
			if _, isStr := v.(string); !(isStr && s["format"] == "int64") {
				errs = append(errs, fmt.Sprintf("%s: %T, want a number", at, v))
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want a boolean", at, v))
		}
	}
	return errs
}

// checkAnswer fails the test unless raw fits the 200 answer of the
// reference's operation.
func (r *reference) checkAnswer(t *testing.T, path, method string, raw []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if errs := r.check(v, r.responseSchema(t, path, method), "$"); len(errs) > 0 {
		t.Errorf("%s %s answers outside the reference's schema:\n%s\n%s", method, path, strings.Join(errs, "\n"), raw)
	}
}

// TestConnectionAnswersFitTheReference: every connection operation answers
// with the reference's JSON (each field declared by its schema, of its type
// and enum), and a request body of the reference's shape is accepted.
func TestConnectionAnswersFitTheReference(t *testing.T) {
	ref := loadReference(t)
	e := newTestEnv(t)
	const base = "/api/v1/organizations/{organization_id}/workspaces/{workspace_id}"
	// The reference's own request schema: every field of this body is
	// declared there (checked first).
	body := `{"connection_name": "crm", "authentication": {"authentication_id": "basic", "authentication_credentials": [{"id": "username", "value": {"text_value": "ana"}}, {"id": "password", "value": {"sensitive_value": {"value": {"text_value": "pw"}}}}]},
		"config_map": {"base url": {"text_value": "https://x.example"}, "timeout seconds": {"number_value": 5}}, "labels": [{"key": "team", "value": "ops"}], "oauth_flow": "OAuthFlowAuthorizationCode"}`
	var bv any
	_ = json.Unmarshal([]byte(body), &bv)
	if errs := ref.check(bv, ref.schema("AddWorkspaceBookConnectionBody"), "body"); len(errs) > 0 {
		t.Fatalf("the test's body is not the reference's: %v", errs)
	}
	do := func(method, path, refPath, body string) []byte {
		t.Helper()
		code, raw := e.APIRaw(t, method, path, body)
		if code != 200 {
			t.Fatalf("%s %s: %d %s", method, path, code, raw)
		}
		ref.checkAnswer(t, base+refPath, method, raw)
		return raw
	}
	raw := do("POST", e.WsPath()+"/books/http/1.0.0/connections", "/books/{book_name}/{book_version}/connections", body)
	var added struct {
		D struct {
			ID string `json:"connection_id"`
		} `json:"book_connection_descriptor"`
	}
	_ = json.Unmarshal(raw, &added)
	id := added.D.ID
	do("GET", e.WsPath()+"/books/http/1.0.0/connections", "/books/{book_name}/{book_version}/connections", "")
	do("PUT", e.WsPath()+"/books/http/1.0.0/connections/"+id, "/books/{book_name}/{book_version}/connections/{connection_id}", `{"connection_name": "crm 2"}`)
	do("GET", e.WsPath()+"/connections/"+id, "/connections/{connection_id}", "")
	do("GET", e.WsPath()+"/connections?page_size=1", "/connections", "")
	e.MkAutomation(t, "Uses it", "call the api at \"/x\" with\n  the connection is \"crm 2\"\n", false)
	raw = do("DELETE", e.WsPath()+"/automations:deleteConnection?connection_id="+id, "/automations:deleteConnection", "")
	if !strings.Contains(string(raw), `"display_name":"Uses it"`) {
		t.Errorf("delete: %s", raw)
	}
	// The checker itself finds what does not fit.
	if errs := ref.check(map[string]any{"book_connection": map[string]any{"secret": "x", "status": map[string]any{"state": "READY"}}},
		ref.schema("v2RetrieveBookConnectionResponse"), "$"); len(errs) != 2 {
		t.Errorf("checker found %v, want an unknown field and an enum value", errs)
	}
}
