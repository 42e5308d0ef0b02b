package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Safe change: automations' tests (rows of automation_tests, snapshotted
// into every revision as a persist.v1.TestSuite), what a publish checked,
// and each automation's last replay with its results.

const testCols = `t.organization_id, t.workspace_id, t.automation_id, t.id, t.display_name, t.spec, t.source_guide_entry,
	t.create_time, t.update_time`

const testSelect = `SELECT ` + testCols + ` FROM automation_tests t`

func scanTest(s interface{ Scan(...any) error }) (store.AutomationTest, error) {
	var t store.AutomationTest
	err := s.Scan(&t.OrganizationID, &t.WorkspaceID, &t.AutomationID, &t.ID, &t.DisplayName, &t.Spec, &t.SourceGuideEntry,
		ts{&t.CreateTime}, ts{&t.UpdateTime})
	return t, err
}

// nameKey is the display name as uniqueness sees it.
func nameKey(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

func (c conn) getTest(ctx context.Context, org, ws, automation, id string, lock bool) (store.AutomationTest, error) {
	q := testSelect + ` WHERE t.organization_id = ? AND t.workspace_id = ? AND t.automation_id = ? AND t.id = ?`
	if lock {
		q += c.db.forUpdate()
	}
	t, err := scanTest(c.queryRow(ctx, q, org, ws, automation, id))
	return t, c.db.mapErr(err, fmt.Sprintf("test %q of automation %q", id, automation))
}

func (c conn) allTests(ctx context.Context, org, ws, automation string) ([]store.AutomationTest, error) {
	rows, err := c.query(ctx, testSelect+` WHERE t.organization_id = ? AND t.workspace_id = ? AND t.automation_id = ?
		ORDER BY t.create_time, t.id`, org, ws, automation)
	if err != nil {
		return nil, c.db.mapErr(err, "list tests")
	}
	defer rows.Close()
	var out []store.AutomationTest
	for rows.Next() {
		t, err := scanTest(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// testsSnapshot is the tests of an automation as a revision keeps them
// (nil when it has none).
func (c conn) testsSnapshot(ctx context.Context, org, ws, automation string) ([]byte, error) {
	tests, err := c.allTests(ctx, org, ws, automation)
	if err != nil || len(tests) == 0 {
		return nil, err
	}
	suite := &persistv1.TestSuite{}
	for _, t := range tests {
		suite.Tests = append(suite.Tests, &persistv1.AutomationTestRow{Id: t.ID, DisplayName: t.DisplayName, Spec: t.Spec,
			SourceGuideEntry: t.SourceGuideEntry, CreateTimeMicros: t.CreateTime.UnixMicro(), UpdateTimeMicros: t.UpdateTime.UnixMicro()})
	}
	return proto.Marshal(suite)
}

// decodeTests reads a revision's snapshot.
func decodeTests(b []byte, v store.AutomationRevision) ([]store.AutomationTest, error) {
	if len(b) == 0 {
		return nil, nil
	}
	suite := &persistv1.TestSuite{}
	if err := proto.Unmarshal(b, suite); err != nil {
		return nil, fmt.Errorf("the tests of revision %d of automation %q: %w", v.Version, v.AutomationID, err)
	}
	out := make([]store.AutomationTest, 0, len(suite.GetTests()))
	for _, r := range suite.GetTests() {
		out = append(out, store.AutomationTest{OrganizationID: v.OrganizationID, WorkspaceID: v.WorkspaceID, AutomationID: v.AutomationID,
			ID: r.GetId(), DisplayName: r.GetDisplayName(), Spec: r.GetSpec(), SourceGuideEntry: r.GetSourceGuideEntry(),
			CreateTime: time.UnixMicro(r.GetCreateTimeMicros()).UTC(), UpdateTime: time.UnixMicro(r.GetUpdateTimeMicros()).UTC()})
	}
	return out, nil
}

// changeDraft adds one to the draft's version for a change of its tests
// and returns the automation as it then is. ErrNotFound if absent or
// deleted.
func (c conn) changeDraft(ctx context.Context, org, ws, automation, userID string, now time.Time) (store.Automation, error) {
	res, err := c.exec(ctx, `UPDATE automations SET version = version + 1, update_time = ?, update_user_id = ?
		WHERE organization_id = ? AND workspace_id = ? AND id = ? AND delete_time IS NULL`, now, userID, org, ws, automation)
	if err != nil {
		return store.Automation{}, c.db.mapErr(err, "change the draft's tests")
	}
	if rowsAffected(res) == 0 {
		return store.Automation{}, fmt.Errorf("automation %q in workspace %q: %w", automation, ws, store.ErrNotFound)
	}
	return c.getAutomation(ctx, org, ws, automation)
}

// CreateAutomationTest implements store.AutomationTests.
func (db *DB) CreateAutomationTest(ctx context.Context, t store.AutomationTest, userID string, max int) (store.AutomationTest, error) {
	if t.ID == "" {
		t.ID = store.NewID()
	}
	if t.Spec == nil {
		t.Spec = []byte{}
	}
	now := db.now()
	var out store.AutomationTest
	err := db.tx(ctx, func(c conn) error {
		a, err := c.changeDraft(ctx, t.OrganizationID, t.WorkspaceID, t.AutomationID, userID, now)
		if err != nil {
			return err
		}
		var n int
		if err := c.queryRow(ctx, `SELECT count(*) FROM automation_tests WHERE organization_id = ? AND workspace_id = ? AND automation_id = ?`,
			t.OrganizationID, t.WorkspaceID, t.AutomationID).Scan(&n); err != nil {
			return db.mapErr(err, "count tests")
		}
		if n >= max {
			return fmt.Errorf("automation %q has %d tests, the most it may: %w", t.AutomationID, n, store.ErrResourceExhausted)
		}
		if _, err := c.exec(ctx, `INSERT INTO automation_tests (organization_id, workspace_id, automation_id, id, display_name, name_key,
			spec, source_guide_entry, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			t.OrganizationID, t.WorkspaceID, t.AutomationID, t.ID, t.DisplayName, nameKey(t.DisplayName), t.Spec, t.SourceGuideEntry, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("create test %q", t.ID))
		}
		if out, err = c.getTest(ctx, t.OrganizationID, t.WorkspaceID, t.AutomationID, t.ID, false); err != nil {
			return err
		}
		return c.addRevision(ctx, a, store.StageDraft, userID, now)
	})
	return out, err
}

// GetAutomationTest implements store.AutomationTests.
func (db *DB) GetAutomationTest(ctx context.Context, org, ws, automation, id string) (store.AutomationTest, error) {
	return db.reader().getTest(ctx, org, ws, automation, id, false)
}

// AllAutomationTests implements store.AutomationTests.
func (db *DB) AllAutomationTests(ctx context.Context, org, ws, automation string) ([]store.AutomationTest, error) {
	return db.reader().allTests(ctx, org, ws, automation)
}

var testKeys = keyset{cols: []sortCol{{Field: "create_time", Col: "t.create_time", Kind: keyTime}, {Field: "id", Col: "t.id", Kind: keyText}},
	desc: []bool{false, false}}

// ListAutomationTests implements store.AutomationTests.
func (db *DB) ListAutomationTests(ctx context.Context, req store.ListAutomationTestsRequest) (store.Page[store.AutomationTest], error) {
	lq, err := newList(db.d, testKeys, nil, nil, req.PageToken, req.PageSize, testSelect,
		"automation tests", req.OrganizationID, req.WorkspaceID, req.AutomationID)
	if err != nil {
		return store.Page[store.AutomationTest]{}, err
	}
	lq.cond("t.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("t.workspace_id = " + lq.a.Add(req.WorkspaceID))
	lq.cond("t.automation_id = " + lq.a.Add(req.AutomationID))
	return scanPage(ctx, db, lq, "list tests", scanTest, func(t store.AutomationTest) []string {
		return []string{timeKey(t.CreateTime), t.ID}
	})
}

// UpdateAutomationTest implements store.AutomationTests.
func (db *DB) UpdateAutomationTest(ctx context.Context, org, ws, automation, id, userID string, change store.AutomationTestChange) (store.AutomationTest, error) {
	now := db.now()
	var out store.AutomationTest
	err := db.tx(ctx, func(c conn) error {
		t, err := c.getTest(ctx, org, ws, automation, id, true)
		if err != nil {
			return err
		}
		if err := change(&t); err != nil {
			return err
		}
		if t.Spec == nil {
			t.Spec = []byte{}
		}
		a, err := c.changeDraft(ctx, org, ws, automation, userID, now)
		if err != nil {
			return err
		}
		if _, err := c.exec(ctx, `UPDATE automation_tests SET display_name = ?, name_key = ?, spec = ?, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND id = ?`,
			t.DisplayName, nameKey(t.DisplayName), t.Spec, now, org, ws, automation, id); err != nil {
			return db.mapErr(err, fmt.Sprintf("update test %q", id))
		}
		if out, err = c.getTest(ctx, org, ws, automation, id, false); err != nil {
			return err
		}
		return c.addRevision(ctx, a, store.StageDraft, userID, now)
	})
	return out, err
}

// DeleteAutomationTest implements store.AutomationTests.
func (db *DB) DeleteAutomationTest(ctx context.Context, org, ws, automation, id, userID string) error {
	now := db.now()
	return db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `DELETE FROM automation_tests WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND id = ?`,
			org, ws, automation, id)
		if err != nil {
			return db.mapErr(err, fmt.Sprintf("delete test %q", id))
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("test %q of automation %q: %w", id, automation, store.ErrNotFound)
		}
		a, err := c.changeDraft(ctx, org, ws, automation, userID, now)
		if err != nil {
			return err
		}
		return c.addRevision(ctx, a, store.StageDraft, userID, now)
	})
}

// PublishCheckedAutomation implements store.AutomationTests.
func (db *DB) PublishCheckedAutomation(ctx context.Context, org, ws, id, userID string, draftVersion int64, check []byte) (store.Automation, error) {
	now := db.now()
	var out store.Automation
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE automations SET version = version + 1, published_version = version + 1,
			published_code = code, published_details = details, publish_user_id = ?, publish_time = ?, update_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND id = ? AND delete_time IS NULL AND version = ?`,
			userID, now, now, org, ws, id, draftVersion)
		if err != nil {
			return db.mapErr(err, "publish automation")
		}
		if rowsAffected(res) == 0 {
			a, err := c.getAutomation(ctx, org, ws, id)
			if err != nil || !a.DeleteTime.IsZero() {
				return fmt.Errorf("automation %q in workspace %q: %w", id, ws, store.ErrNotFound)
			}
			return fmt.Errorf("automation %q: the draft is at version %d, not %d: %w", id, a.Version, draftVersion, store.ErrStageChanged)
		}
		if out, err = c.getAutomation(ctx, org, ws, id); err != nil {
			return err
		}
		return c.addRevisionWith(ctx, out, store.StagePublished, userID, now, check)
	})
	return out, err
}

// ---------------------------------------------------------------------------
// Replays

const replayCols = `p.organization_id, p.workspace_id, p.automation_id, p.id, p.state, p.automation_version, p.published_version,
	p.filter, p.run_count, p.replayed, p.unchanged, p.outputs_differ, p.new_exception, p.unanswered_call, p.failed, p.error_message,
	p.create_time, p.update_time, p.end_time`

func scanReplay(s interface{ Scan(...any) error }) (store.Replay, error) {
	var r store.Replay
	var state string
	err := s.Scan(&r.OrganizationID, &r.WorkspaceID, &r.AutomationID, &r.ID, &state, &r.AutomationVersion, &r.PublishedVersion,
		&r.Filter, &r.RunCount, &r.Replayed, &r.Unchanged, &r.OutputsDiffer, &r.NewException, &r.UnansweredCall, &r.Failed,
		&r.ErrorMessage, ts{&r.CreateTime}, ts{&r.UpdateTime}, ts{&r.EndTime})
	r.State = store.ReplayState(state)
	return r, err
}

func (c conn) getReplay(ctx context.Context, org, ws, automation string, lock bool) (store.Replay, error) {
	q := `SELECT ` + replayCols + ` FROM automation_replays p WHERE p.organization_id = ? AND p.workspace_id = ? AND p.automation_id = ?`
	if lock {
		q += c.db.forUpdate()
	}
	r, err := scanReplay(c.queryRow(ctx, q, org, ws, automation))
	return r, c.db.mapErr(err, fmt.Sprintf("the replay of automation %q", automation))
}

// StartReplay implements store.Replays.
func (db *DB) StartReplay(ctx context.Context, r store.Replay, stale time.Duration) (store.Replay, error) {
	if r.ID == "" {
		r.ID = store.NewID()
	}
	now := db.now()
	var out store.Replay
	err := db.tx(ctx, func(c conn) error {
		if _, err := c.getAutomation(ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID); err != nil {
			return err
		}
		old, err := c.getReplay(ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID, true)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return err
		default:
			if old.State == store.ReplayRunning && now.Sub(old.UpdateTime) < stale {
				return fmt.Errorf("a replay of automation %q is running (%d of %d runs): %w", r.AutomationID, old.Replayed, old.RunCount, store.ErrFailedPrecondition)
			}
			if _, err := c.exec(ctx, `DELETE FROM automation_replay_results WHERE replay_id = ?`, old.ID); err != nil {
				return db.mapErr(err, "remove the last replay's results")
			}
			if _, err := c.exec(ctx, `DELETE FROM automation_replays WHERE id = ?`, old.ID); err != nil {
				return db.mapErr(err, "remove the last replay")
			}
		}
		if _, err := c.exec(ctx, `INSERT INTO automation_replays (organization_id, workspace_id, automation_id, id, state, automation_version,
			published_version, filter, run_count, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID, string(store.ReplayRunning), r.AutomationVersion, r.PublishedVersion,
			r.Filter, r.RunCount, now, now); err != nil {
			return db.mapErr(err, "start a replay")
		}
		out, err = c.getReplay(ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID, false)
		return err
	})
	return out, err
}

// GetReplay implements store.Replays.
func (db *DB) GetReplay(ctx context.Context, org, ws, automation string) (store.Replay, error) {
	return db.reader().getReplay(ctx, org, ws, automation, false)
}

// resultRows bounds the rows of one INSERT of results.
const resultRows = 500

// SaveReplay implements store.Replays.
func (db *DB) SaveReplay(ctx context.Context, r store.Replay, results []store.ReplayResult) (store.Replay, error) {
	now := db.now()
	var out store.Replay
	err := db.tx(ctx, func(c conn) error {
		res, err := c.exec(ctx, `UPDATE automation_replays SET state = ?, run_count = ?, replayed = ?, unchanged = ?, outputs_differ = ?, new_exception = ?,
			unanswered_call = ?, failed = ?, error_message = ?, update_time = ?, end_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND id = ?`,
			string(r.State), r.RunCount, r.Replayed, r.Unchanged, r.OutputsDiffer, r.NewException, r.UnansweredCall, r.Failed, r.ErrorMessage,
			now, nullTime(r.EndTime), r.OrganizationID, r.WorkspaceID, r.AutomationID, r.ID)
		if err != nil {
			return db.mapErr(err, "save the replay")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("replay %q of automation %q was replaced: %w", r.ID, r.AutomationID, store.ErrConflict)
		}
		for start := 0; start < len(results); start += resultRows {
			batch := results[start:min(start+resultRows, len(results))]
			args := make([]any, 0, 6*len(batch))
			for _, x := range batch {
				args = append(args, r.ID, x.Seq, x.RunID, x.Outcome, x.RunCreateTime, x.Data)
			}
			q := `INSERT INTO automation_replay_results (replay_id, seq, run_id, outcome, run_create_time, data) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?), ", len(batch)), ", ")
			if _, err := c.exec(ctx, q, args...); err != nil {
				return db.mapErr(err, "save replay results")
			}
		}
		out, err = c.getReplay(ctx, r.OrganizationID, r.WorkspaceID, r.AutomationID, false)
		return err
	})
	return out, err
}

var resultKeys = keyset{cols: []sortCol{{Field: "seq", Col: "rr.seq", Kind: keyInt}}, desc: []bool{false}}

var replayResultFields = fields{
	"outcome": {col: "rr.outcome"},
}

func scanReplayResult(s interface{ Scan(...any) error }) (store.ReplayResult, error) {
	var x store.ReplayResult
	err := s.Scan(&x.ReplayID, &x.Seq, &x.RunID, &x.Outcome, ts{&x.RunCreateTime}, &x.Data)
	return x, err
}

// ListReplayResults implements store.Replays.
func (db *DB) ListReplayResults(ctx context.Context, req store.ListReplayResultsRequest) (store.Page[store.ReplayResult], error) {
	var zero store.Page[store.ReplayResult]
	r, err := db.reader().getReplay(ctx, req.OrganizationID, req.WorkspaceID, req.AutomationID, false)
	if err != nil {
		return zero, err
	}
	lq, err := newList(db.d, resultKeys, replayResultFields, req.Filter, req.PageToken, req.PageSize,
		`SELECT rr.replay_id, rr.seq, rr.run_id, rr.outcome, rr.run_create_time, rr.data FROM automation_replay_results rr`,
		"replay results", r.ID)
	if err != nil {
		return zero, err
	}
	lq.cond("rr.replay_id = " + lq.a.Add(r.ID))
	return scanPage(ctx, db, lq, "list replay results", scanReplayResult, func(x store.ReplayResult) []string {
		return []string{strconv.Itoa(x.Seq)}
	})
}

// ListRunRecords implements store.Replays: two reads of a set of runs, the
// journal (run_journal) and the exceptions resolved (their RESOLVED
// history entries, with the guidance of the guide entry that resolved one
// when the entry carries none).
func (db *DB) ListRunRecords(ctx context.Context, org, ws string, runIDs []string) (map[string]store.RunRecord, error) {
	out := map[string]store.RunRecord{}
	if len(runIDs) == 0 {
		return out, nil
	}
	c := db.reader()
	if err := c.runJournals(ctx, org, ws, runIDs, out); err != nil {
		return nil, err
	}
	if err := c.runResolutions(ctx, org, ws, runIDs, out); err != nil {
		return nil, err
	}
	return out, nil
}

// runJournals adds the journals of the runs (of the workspace) to out.
func (c conn) runJournals(ctx context.Context, org, ws string, runIDs []string, out map[string]store.RunRecord) error {
	args := append([]any{org, ws}, anySlice(runIDs)...)
	rows, err := c.query(ctx, `SELECT j.run_id, j.step, j.seq, j.kind, j.key, j.data FROM run_journal j
		JOIN runs r ON r.id = j.run_id AND r.organization_id = ? AND r.workspace_id = ?
		WHERE j.run_id IN (`+placeholders(len(runIDs))+`) ORDER BY j.run_id, j.step, j.seq`, args...)
	if err != nil {
		return c.db.mapErr(err, "read the runs' journals")
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var e store.JournalEntry
		if err := rows.Scan(&id, &e.Step, &e.Seq, &e.Kind, &e.Key, &e.Data); err != nil {
			return err
		}
		r := out[id]
		r.Journal = append(r.Journal, e)
		out[id] = r
	}
	return rows.Err()
}

// runResolutions adds the resolved exceptions of the runs to out, in the
// order they were resolved.
func (c conn) runResolutions(ctx context.Context, org, ws string, runIDs []string, out map[string]store.RunRecord) error {
	args := append([]any{org, ws}, anySlice(runIDs)...)
	rows, err := c.query(ctx, `SELECT x.run_id, x.id, x.automation_id, x.step, x.group_id, x.message, x.loc_start, x.loc_end, x.details,
		x.resolver, x.resolution_guide_entry, e.data, g.guidance
		FROM run_events e
		JOIN exceptions x ON x.organization_id = ? AND x.workspace_id = ? AND x.id = e.ref AND x.run_id = e.run_id
		LEFT JOIN guide_entries g ON g.organization_id = x.organization_id AND g.workspace_id = x.workspace_id AND g.id = x.resolution_guide_entry
		WHERE e.run_id IN (`+placeholders(len(runIDs))+`) AND e.kind = ? AND e.state = ?
		ORDER BY e.run_id, e.id`, append(args, string(store.RunEventException), string(store.ExceptionResolved))...)
	if err != nil {
		return c.db.mapErr(err, "read the runs' resolved exceptions")
	}
	defer rows.Close()
	for rows.Next() {
		var x store.Exception
		var data, entryGuidance []byte
		var guide sql.NullString
		if err := rows.Scan(&x.RunID, &x.ID, &x.AutomationID, &x.Step, &x.Group, &x.Message, &x.Location.Start, &x.Location.End,
			&x.Details, &x.Resolver, &guide, &data, &entryGuidance); err != nil {
			return err
		}
		x.OrganizationID, x.WorkspaceID, x.State, x.ResolutionGuideEntry = org, ws, store.ExceptionResolved, guide.String
		if len(data) == 0 {
			data = entryGuidance
		}
		r := out[x.RunID]
		r.Resolved = append(r.Resolved, store.ResolvedException{Exception: x, Guidance: data})
		out[x.RunID] = r
	}
	return rows.Err()
}
