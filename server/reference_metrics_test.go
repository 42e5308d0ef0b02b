package server_test

import (
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/proserun/prose/server/testenv"
)

// TestQueryMetricsRequiredFields: the reference requires series[].tags and
// points[].value. Without group_by the one series has no tags, and an
// interval without runs counts 0: both are still in the JSON ({} and 0),
// where protojson would leave them out.
func TestQueryMetricsRequiredFields(t *testing.T) {
	e := newTestEnv(t)
	now := time.Now()
	q := url.Values{"metrics": {"runs"}, "start_time": {now.Add(-2 * time.Hour).UTC().Format(time.RFC3339)},
		"end_time": {now.UTC().Format(time.RFC3339)}, "interval": {"METRIC_INTERVAL_HOUR"}, "aggregation": {"AGGREGATION_FUNCTION_COUNT"}}
	code, raw := e.APIRaw(t, "GET", "/api/v1/organizations/"+e.Init.OrganizationID+"/metrics:query?"+q.Encode(), "")
	if code != 200 {
		t.Fatalf("%d %s", code, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	checkSchema(t, "v1QueryMetricsResponse", m)
	results, _ := m["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("results %s", raw)
	}
	series, _ := testenv.Field(results[0], "series").([]any)
	if len(series) == 0 {
		t.Fatalf("no series: %s", raw)
	}
	for _, s := range series {
		tags, ok := testenv.Field(s, "tags").(map[string]any)
		if !ok || len(tags) != 0 {
			t.Errorf("series without group_by: tags %v, want {} (%s)", testenv.Field(s, "tags"), raw)
		}
		points, _ := testenv.Field(s, "points").([]any)
		if len(points) == 0 {
			t.Errorf("series without points: %s", raw)
		}
		for _, p := range points {
			if v, ok := testenv.Field(p, "value").(float64); !ok || v != 0 {
				t.Errorf("point value %v, want 0 (%s)", testenv.Field(p, "value"), raw)
			}
		}
	}
}
