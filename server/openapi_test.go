package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	"github.com/getkin/kin-openapi/openapi2"
	"github.com/getkin/kin-openapi/openapi2conv"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/proserun/prose/gen/openapi"
	"github.com/proserun/prose/server"
)

// The served OpenAPI document is a valid Swagger 2.0 document (checked by
// kin-openapi, after its conversion to OpenAPI 3) with Prose's title, the
// running version, and the two API key schemes required by every operation
// but the public health check.
func TestOpenAPIDocument(t *testing.T) {
	e := newTestEnv(t)
	resp, err := http.Get(e.Srv.URL + "/openapi.json")
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

// The protos' protovalidate rules are in the served document as JSON
// Schema keywords (openapi.WithConstraints), and every annotated field of
// a request the document describes got its rules written, none left
// unsaid: the document cannot drift from the protos.
func TestOpenAPIConstraints(t *testing.T) {
	e := newTestEnv(t)
	resp, err := http.Get(e.Srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths       map[string]map[string]map[string]any `json:"paths"`
		Definitions map[string]map[string]any            `json:"definitions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	param := func(opID, name string) map[string]any {
		for _, item := range doc.Paths {
			for _, op := range item {
				if op["operationId"] != opID {
					continue
				}
				for _, p := range op["parameters"].([]any) {
					if pm := p.(map[string]any); pm["name"] == name {
						return pm
					}
				}
			}
		}
		t.Fatalf("%s has no parameter %s", opID, name)
		return nil
	}
	prop := func(def, name string) map[string]any {
		props, _ := doc.Definitions[def]["properties"].(map[string]any)
		p, _ := props[name].(map[string]any)
		if p == nil {
			t.Fatalf("definition %s has no property %s", def, name)
		}
		return p
	}
	for _, c := range []struct {
		where string
		got   map[string]any
		want  map[string]any
	}{
		{"v1ApiKey.display_name", prop("v1ApiKey", "display_name"), map[string]any{"maxLength": 200.0, "pattern": `\S`}},
		{"v1Automation.display_name", prop("v1Automation", "display_name"), map[string]any{"pattern": `\S`}},
		{"CreateAutomation ?automation_id", param("AutomationService_CreateAutomation", "automation_id"), map[string]any{"pattern": "^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$"}},
		{"InvokeAutomation body request_id", prop("AutomationServiceInvokeAutomationBody", "request_id"), map[string]any{"x-maxBytes": 128.0}},
		{"ListExceptions ?skip", param("ExceptionService_ListExceptions", "skip"), map[string]any{"minimum": 0.0}},
		{"ListRuns ?page_size", param("RunService_ListRuns", "page_size"), map[string]any{"minimum": 0.0}},
		{"v1ApiKey.restricted_permissions keys", prop("v1ApiKey", "restricted_permissions")["x-keys"].(map[string]any), map[string]any{"pattern": `^[a-z][a-z_]*\.[a-z][a-z_]*$`}},
	} {
		for k, v := range c.want {
			if c.got[k] != v {
				t.Errorf("%s: %s = %v, want %v", c.where, k, c.got[k], v)
			}
		}
	}

	// Against the protos: every field with rules, in a request message of
	// a method the document has an operation for (or a message such a
	// request holds), is among those WithConstraints wrote.
	_, report, err := openapi.WithConstraints(openapi.JSON, protoregistry.GlobalFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(report.Unsaid) > 0 {
		t.Errorf("rules with no OpenAPI keyword (add them to openapi.WithConstraints): %v", report.Unsaid)
	}
	ops := map[string]bool{}
	for _, item := range doc.Paths {
		for _, op := range item {
			ops[op["operationId"].(string)] = true
		}
	}
	annotated := map[protoreflect.FullName]bool{}
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			if proto.HasExtension(fd.Options(), validate.E_Field) {
				rules := proto.GetExtension(fd.Options(), validate.E_Field).(*validate.FieldRules)
				if rules.GetRequired() || rules.ProtoReflect().WhichOneof(rules.ProtoReflect().Descriptor().Oneofs().ByName("type")) != nil {
					annotated[fd.FullName()] = true
				}
			}
			switch {
			case fd.IsMap() && fd.MapValue().Message() != nil:
				walk(fd.MapValue().Message())
			case fd.Message() != nil:
				walk(fd.Message())
			}
		}
	}
	protoregistry.GlobalFiles.RangeFilesByPackage("prose.platform.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			for j := range sd.Methods().Len() {
				if md := sd.Methods().Get(j); ops[string(sd.Name())+"_"+string(md.Name())] {
					walk(md.Input())
				}
			}
		}
		return true
	})
	if len(annotated) < 30 {
		t.Errorf("found %d annotated request fields; the protos have more", len(annotated))
	}
	for f := range annotated {
		if !report.Fields[f] {
			t.Errorf("%s has protovalidate rules that are not in the OpenAPI document", f)
		}
	}
}
