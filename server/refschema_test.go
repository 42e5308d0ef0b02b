package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/proserun/prose/server/testenv"
)

// The reference (testdata/reference/platform-openapi.yaml, the platform's
// public description) checks answers against its schemas: every field is
// one the schema has, of its JSON type (enums by one of their names), and
// required fields are present.

var (
	refOnce sync.Once
	refDoc  map[string]any
	refErr  error
)

// referenceDoc is the reference, read once.
func referenceDoc(t *testing.T) map[string]any {
	t.Helper()
	refOnce.Do(func() {
		data, err := os.ReadFile(filepath.Join("testdata", "reference", "platform-openapi.yaml"))
		if err == nil {
			err = yaml.Unmarshal(data, &refDoc)
		}
		refErr = err
	})
	if refErr != nil {
		t.Fatalf("the reference: %v", refErr)
	}
	return refDoc
}

func referenceSchemas(t *testing.T) map[string]any {
	t.Helper()
	schemas, _ := testenv.Field(referenceDoc(t), "components.schemas").(map[string]any)
	if schemas == nil {
		t.Fatal("the reference has no components.schemas")
	}
	return schemas
}

func checkSchema(t *testing.T, name string, v any) {
	t.Helper()
	schemas := referenceSchemas(t)
	s, ok := schemas[name].(map[string]any)
	if !ok {
		t.Fatalf("the reference has no schema %s", name)
	}
	for _, p := range matchSchema(schemas, s, v, name) {
		t.Errorf("%s", p)
	}
}

func matchSchema(schemas map[string]any, s map[string]any, v any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		target, _ := schemas[strings.TrimPrefix(ref, "#/components/schemas/")].(map[string]any)
		if target == nil {
			return []string{path + ": unresolved " + ref}
		}
		return matchSchema(schemas, target, v, path)
	}
	typ, _ := s["type"].(string)
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		}
	}
	var out []string
	switch typ {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an object", path, v)}
		}
		props, _ := s["properties"].(map[string]any)
		addl, _ := s["additionalProperties"].(map[string]any)
		for k, x := range m {
			if p, ok := props[k].(map[string]any); ok {
				out = append(out, matchSchema(schemas, p, x, path+"."+k)...)
			} else if addl != nil {
				out = append(out, matchSchema(schemas, addl, x, path+"."+k)...)
			} else {
				out = append(out, path+"."+k+": not in the reference's schema")
			}
		}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if _, ok := m[fmt.Sprint(r)]; !ok && !isReadOnly(props, fmt.Sprint(r)) {
					out = append(out, path+"."+fmt.Sprint(r)+": required")
				}
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want an array", path, v)}
		}
		items, _ := s["items"].(map[string]any)
		for i, x := range a {
			out = append(out, matchSchema(schemas, items, x, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{fmt.Sprintf("%s: %T, want a string", path, v)}
		}
		if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == str }) {
			out = append(out, fmt.Sprintf("%s: %q is not one of %v", path, str, enum))
		}
	case "integer", "number":
		if _, ok := v.(float64); !ok {
			return []string{fmt.Sprintf("%s: %T, want a JSON number", path, v)}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return []string{fmt.Sprintf("%s: %T, want a boolean", path, v)}
		}
	}
	return out
}

func isReadOnly(props map[string]any, name string) bool {
	p, _ := props[name].(map[string]any)
	ro, _ := p["readOnly"].(bool)
	return ro
}
