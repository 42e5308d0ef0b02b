package openapi

// This file is written by hand (see openapi.go).

import (
	"encoding/json"
	"fmt"
)

// ExtensionMark is the vendor extension set (true) on a definition's
// property that the public reference of the platform API does not have.
const ExtensionMark = "x-prose-extension"

// Extensions are the fields Prose answers beyond the reference, by
// definition: kept because clients use them (the legacy interface's share
// ids, the stage an answer shows, the guidance an exception asks for), and
// marked so that a client written against the reference knows it may ignore
// them. cmd/prose's TestServedOpenAPIMarksExtensions keeps the table equal
// to the difference between the served document and the reference.
var Extensions = map[string][]string{
	"v1Automation": {"draft_share_id", "published_share_id", "stage", "stage_version", "code_warnings"},
	"v1Exception":  {"guidance_request", "run_number"},
	// The run that started a child run (a procedure of the program run as a
	// run of its own).
	"platformV1Run": {"parent_run", "run_number"},
	// what a publish checked (docs/safe-change.md)
	"v1AutomationRevision": {"publish_check"},
}

// WithExtensions returns doc with ExtensionMark on every property of
// Extensions; a property the document lacks is an error (a stale table).
func WithExtensions(doc []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, err
	}
	var defs map[string]map[string]any
	if err := json.Unmarshal(top["definitions"], &defs); err != nil {
		return nil, err
	}
	for name, fields := range Extensions {
		props, _ := defs[name]["properties"].(map[string]any)
		for _, f := range fields {
			p, ok := props[f].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("openapi: extension %s.%s: no such property", name, f)
			}
			p[ExtensionMark] = true
		}
	}
	b, err := json.Marshal(defs)
	if err != nil {
		return nil, err
	}
	top["definitions"] = b
	return json.MarshalIndent(top, "", "  ")
}
