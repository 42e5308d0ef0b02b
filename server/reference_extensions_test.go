package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"testing"
)

// TestServedOpenAPIMarksExtensions compares the served OpenAPI document's
// definitions with the reference's schemas of the same name, field by
// field: a field the reference does not have is a Prose extension, and
// must say so (x-prose-extension: true on the property) so that a client
// written against the reference knows it may ignore it. A field marked but
// in the reference is an error too (a stale mark).
func TestServedOpenAPIMarksExtensions(t *testing.T) {
	ref := referenceSchemas(t)
	e := newTestEnv(t)
	resp, err := http.Get(e.Srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc struct {
		Definitions map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"definitions"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	compared := 0
	var unmarked, stale []string
	for name, def := range doc.Definitions {
		rs, ok := ref[name].(map[string]any)
		if !ok {
			continue // a Prose message the reference has no schema for
		}
		rprops, _ := rs["properties"].(map[string]any)
		if rprops == nil {
			continue // an enum, or a schema without fields
		}
		compared++
		for field, p := range def.Properties {
			_, inRef := rprops[field]
			marked := p["x-prose-extension"] == true
			switch {
			case !inRef && !marked:
				unmarked = append(unmarked, name+"."+field)
			case inRef && marked:
				stale = append(stale, name+"."+field)
			}
		}
	}
	sort.Strings(unmarked)
	sort.Strings(stale)
	if compared < 100 {
		t.Errorf("only %d definitions compared with the reference", compared)
	}
	for _, f := range unmarked {
		t.Errorf("%s is not in the reference and not marked x-prose-extension", f)
	}
	for _, f := range stale {
		t.Errorf("%s is in the reference but marked x-prose-extension", f)
	}
}
