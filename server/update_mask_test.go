package server_test

import (
	"strings"
	"testing"
)

// update_mask paths are checked with aip-go's fieldmask.Validate: a path
// that names no field of the resource, or "*" beside other paths, is
// INVALID_ARGUMENT naming it; "*" alone updates every writable field.
func TestUpdateMaskPaths(t *testing.T) {
	e := newTestEnv(t)
	a := e.MkAutomation(t, "masked", greetCode, false)
	auto := e.AutomationsPath() + "/" + a.ID
	for _, c := range []struct{ path, body, want string }{
		{auto + "?update_mask=nope", `{"description":"d"}`, "invalid field path: nope"},
		{auto + "?update_mask=*,description", `{"display_name":"x","english_code":"the output x is 1\n"}`, "'*' must not be used with other paths"},
		{auto + "?update_mask=create_time", `{}`, `\"create_time\" cannot be updated`},
		{e.WsPath() + "?update_mask=title.x", `{"title":"t"}`, "invalid field path: title.x"},
	} {
		code, _, raw := e.DoHTTP(t, "PATCH", c.path, c.body, map[string]string{"Authorization": "Bearer " + e.Init.APIKey})
		if code != 400 || !strings.Contains(string(raw), c.want) {
			t.Errorf("PATCH %s: %d %s, want 400 mentioning %q", c.path, code, raw, c.want)
		}
	}
	m := e.API(t, "PATCH", auto+"?update_mask=*", `{"display_name":"all of it","english_code":"the output x is 1\n"}`, 200)
	if m["display_name"] != "all of it" {
		t.Errorf("a * update: %v", m)
	}
	w := e.API(t, "PATCH", e.WsPath()+"?update_mask=*", `{"title":"Everything"}`, 200)
	if w["title"] != "Everything" {
		t.Errorf("a * workspace update: %v", w)
	}
}
