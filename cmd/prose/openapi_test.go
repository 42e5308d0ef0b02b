package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"

	"github.com/proserun/prose/server"
)

// The served OpenAPI document is a valid Swagger 2.0 document (checked by
// kin-openapi, after its conversion to OpenAPI 3) with Prose's title, the
// running version, and the two API key schemes required by every operation
// but the public health check.
func TestOpenAPIDocument(t *testing.T) {
	e := newTestEnv(t)
	resp, err := http.Get(e.srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d %v", resp.StatusCode, err)
	}
	var doc2 openapi2.T
	if err := json.Unmarshal(raw, &doc2); err != nil {
		t.Fatalf("not a Swagger 2.0 document: %v", err)
	}
	if doc2.Swagger != "2.0" || doc2.Info.Title != "Prose" || doc2.Info.Version != server.Version {
		t.Errorf("swagger %q, info %q %q; want 2.0, Prose, %q", doc2.Swagger, doc2.Info.Title, doc2.Info.Version, server.Version)
	}
	for name, header := range map[string]string{"bearer": "Authorization", "api_key": "x-api-key"} {
		s := doc2.SecurityDefinitions[name]
		if s == nil || s.Type != "apiKey" || s.In != "header" || s.Name != header {
			t.Errorf("security definition %q: %+v, want an apiKey in the header %s", name, s, header)
		}
	}
	if len(doc2.Security) != 2 {
		t.Errorf("document security %v, want bearer or api_key", doc2.Security)
	}
	doc3, err := openapi2conv.ToV3(&doc2)
	if err != nil {
		t.Fatalf("convert to OpenAPI 3: %v", err)
	}
	if err := doc3.Validate(context.Background()); err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	health := doc3.Paths.Find("/v2/health")
	if health == nil || health.Get == nil || health.Get.Security == nil || len(*health.Get.Security) != 0 {
		t.Errorf("GET /v2/health should need no credentials: %+v", health)
	}
	runs := doc3.Paths.Find("/api/v1/organizations/{organization}/workspaces/{workspace}/automations/{automation}/runs")
	if runs == nil || runs.Get == nil || runs.Get.Security != nil {
		t.Errorf("ListRuns should use the document's security requirement")
	}
}
