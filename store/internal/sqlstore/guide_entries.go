package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
)

const guideCols = `g.organization_id, g.workspace_id, g.automation_id, g.id, g.title, g.root_cause, g.resolution_steps,
	g.resolution_code, g.resolution_notes, g.state, g.deleted_state, g.source_exception, g.source_run, g.version_major,
	g.version_minor, g.statement, g.statement_hash, g.group_id, g.fact, g.question, g.guidance, g.create_time,
	g.update_time, g.delete_time`

const guideSelect = `SELECT ` + guideCols + ` FROM guide_entries g`

func scanGuideEntry(s interface{ Scan(...any) error }) (store.GuideEntry, error) {
	var g store.GuideEntry
	var state, deleted string
	err := s.Scan(&g.OrganizationID, &g.WorkspaceID, &g.AutomationID, &g.ID, &g.Title, &g.RootCause, &g.ResolutionSteps,
		&g.ResolutionCode, &g.ResolutionNotes, &state, &deleted, &g.SourceException, &g.SourceRun, &g.VersionMajor,
		&g.VersionMinor, &g.Statement, &g.StatementHash, &g.Group, &g.Fact, &g.Question, &g.Guidance, ts{&g.CreateTime},
		ts{&g.UpdateTime}, ts{&g.DeleteTime})
	g.State, g.DeletedState = store.GuideEntryState(state), store.GuideEntryState(deleted)
	return g, err
}

func (c conn) getGuideEntry(ctx context.Context, org, ws, automation, id string, lock bool) (store.GuideEntry, error) {
	q := guideSelect + ` WHERE g.organization_id = ? AND g.workspace_id = ? AND g.automation_id = ? AND g.id = ?`
	if lock {
		q += c.db.forUpdate()
	}
	g, err := scanGuideEntry(c.queryRow(ctx, q, org, ws, automation, id))
	return g, c.db.mapErr(err, fmt.Sprintf("guide entry %q of automation %q", id, automation))
}

// CreateGuideEntry implements store.GuideEntries.
func (db *DB) CreateGuideEntry(ctx context.Context, g store.GuideEntry) (store.GuideEntry, error) {
	if g.ID == "" {
		g.ID = store.NewID()
	}
	if g.State == "" {
		g.State = store.GuidePendingApproval
	}
	if g.Guidance == nil {
		g.Guidance = []byte{}
	}
	now := db.now()
	var out store.GuideEntry
	err := db.tx(ctx, func(c conn) error {
		if err := c.workspaceExists(ctx, g.OrganizationID, g.WorkspaceID); err != nil {
			return err
		}
		if _, err := c.exec(ctx, `INSERT INTO guide_entries (organization_id, workspace_id, automation_id, id, title, root_cause,
			resolution_steps, resolution_code, resolution_notes, state, source_exception, source_run, version_major, version_minor,
			statement, statement_hash, group_id, fact, question, guidance, create_time, update_time)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			g.OrganizationID, g.WorkspaceID, g.AutomationID, g.ID, g.Title, g.RootCause, g.ResolutionSteps, g.ResolutionCode,
			g.ResolutionNotes, string(g.State), g.SourceException, g.SourceRun, g.VersionMajor, g.VersionMinor,
			g.Statement, g.StatementHash, g.Group, g.Fact, g.Question, g.Guidance, now, now); err != nil {
			return db.mapErr(err, fmt.Sprintf("create guide entry %q", g.ID))
		}
		var err error
		out, err = c.getGuideEntry(ctx, g.OrganizationID, g.WorkspaceID, g.AutomationID, g.ID, false)
		return err
	})
	return out, err
}

// GetGuideEntry implements store.GuideEntries.
func (db *DB) GetGuideEntry(ctx context.Context, org, ws, automation, id string) (store.GuideEntry, error) {
	return db.reader().getGuideEntry(ctx, org, ws, automation, id, false)
}

var guideSort = map[string]sortCol{
	"create_time": {Field: "create_time", Col: "g.create_time", Kind: keyTime},
}

// ListGuideEntries implements store.GuideEntries.
func (db *DB) ListGuideEntries(ctx context.Context, req store.ListGuideEntriesRequest) (store.Page[store.GuideEntry], int, error) {
	var zero store.Page[store.GuideEntry]
	ks, err := newKeyset(nil, store.OrderBy{{Field: "create_time", Desc: true}}, guideSort, "g.id")
	if err != nil {
		return zero, 0, err
	}
	automation := req.AutomationID
	if automation == "-" {
		automation = ""
	}
	lq, err := newList(db.d, ks, guideFields, req.Filter, req.PageToken, req.PageSize, guideSelect,
		"guide entries", req.OrganizationID, req.WorkspaceID, automation, "deleted="+strconv.FormatBool(req.ShowDeleted))
	if err != nil {
		return zero, 0, err
	}
	// The conditions of the page and of the count (the keyset's aside).
	a := NewArgs(db.d)
	conds := []string{"g.organization_id = " + a.Add(req.OrganizationID), "g.workspace_id = " + a.Add(req.WorkspaceID)}
	lq.cond("g.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("g.workspace_id = " + lq.a.Add(req.WorkspaceID))
	if automation != "" {
		lq.cond("g.automation_id = " + lq.a.Add(automation))
		conds = append(conds, "g.automation_id = "+a.Add(automation))
	}
	if !req.ShowDeleted {
		lq.cond("g.delete_time IS NULL")
		conds = append(conds, "g.delete_time IS NULL")
	}
	if req.Filter != nil {
		c, err := guideFields.where(a, req.Filter)
		if err != nil {
			return zero, 0, err
		}
		conds = append(conds, c)
	}
	p, err := scanPage(ctx, db, lq, "list guide entries", scanGuideEntry, func(g store.GuideEntry) []string {
		return []string{timeKey(g.CreateTime), g.ID}
	})
	if err != nil {
		return zero, 0, err
	}
	var total int
	q := `SELECT count(*) FROM guide_entries g WHERE ` + strings.Join(conds, " AND ")
	if err := db.r.QueryRowContext(ctx, q, a.Values...).Scan(&total); err != nil {
		return zero, 0, db.mapErr(err, "count guide entries")
	}
	return p, total, nil
}

// UpdateGuideEntry implements store.GuideEntries.
func (db *DB) UpdateGuideEntry(ctx context.Context, org, ws, automation, id string, change store.GuideEntryChange) (store.GuideEntry, error) {
	var out store.GuideEntry
	err := db.tx(ctx, func(c conn) error {
		g, err := c.getGuideEntry(ctx, org, ws, automation, id, true)
		if err != nil {
			return err
		}
		if err := change(&g); err != nil {
			return err
		}
		now := db.now()
		if _, err := c.exec(ctx, `UPDATE guide_entries SET title = ?, root_cause = ?, resolution_steps = ?, resolution_notes = ?,
			state = ?, deleted_state = ?, version_major = ?, version_minor = ?, update_time = ?, delete_time = ?
			WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND id = ?`,
			g.Title, g.RootCause, g.ResolutionSteps, g.ResolutionNotes, string(g.State), string(g.DeletedState),
			g.VersionMajor, g.VersionMinor, now, nullTime(g.DeleteTime), org, ws, automation, id); err != nil {
			return db.mapErr(err, fmt.Sprintf("update guide entry %q", id))
		}
		out, err = c.getGuideEntry(ctx, org, ws, automation, id, false)
		return err
	})
	return out, err
}

// PurgeGuideEntry implements store.GuideEntries.
func (db *DB) PurgeGuideEntry(ctx context.Context, org, ws, automation, id string) error {
	res, err := db.writer().exec(ctx, `DELETE FROM guide_entries WHERE organization_id = ? AND workspace_id = ? AND automation_id = ? AND id = ?`,
		org, ws, automation, id)
	if err != nil {
		return db.mapErr(err, fmt.Sprintf("purge guide entry %q", id))
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("guide entry %q of automation %q: %w", id, automation, store.ErrNotFound)
	}
	return nil
}

// MatchGuideEntries implements store.GuideEntries: one range of the
// partial index guide_entries_match.
func (db *DB) MatchGuideEntries(ctx context.Context, m store.GuideMatch) ([]store.GuideEntry, error) {
	rows, err := db.reader().query(ctx, guideSelect+` WHERE g.organization_id = ? AND g.workspace_id = ? AND g.automation_id = ?
		AND g.statement_hash = ? AND g.state = 'APPROVED' AND g.delete_time IS NULL ORDER BY g.create_time, g.id`,
		m.OrganizationID, m.WorkspaceID, m.AutomationID, m.StatementHash)
	if err != nil {
		return nil, db.mapErr(err, "match guide entries")
	}
	defer rows.Close()
	var out []store.GuideEntry
	for rows.Next() {
		g, err := scanGuideEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// guidedInsert writes a guided exception unless its run has the most
// already: one statement, the bound checked in it.
const guidedInsert = `INSERT INTO exceptions (organization_id, workspace_id, id, run_id, automation_id, stage, step, group_id,
	message, description, loc_start, loc_end, details, state, assignee, resolver, resolution_guide_entry, extra, create_time, update_time)
	SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
	WHERE (SELECT count(*) FROM exceptions WHERE run_id = ? AND resolution_guide_entry <> '') < ?`

func (c conn) recordGuided(ctx context.Context, g store.GuidedException, now time.Time) (store.Exception, error) {
	x := g.Exception
	if x.ID == "" {
		x.ID = store.NewID()
	}
	if x.Extra == nil {
		x.Extra = map[string]string{}
	}
	x.State = store.ExceptionResolved
	x.Resolver = "guideEntries/" + g.Entry
	x.ResolutionGuideEntry = g.Entry
	res, err := c.exec(ctx, guidedInsert,
		x.OrganizationID, x.WorkspaceID, x.ID, x.RunID, x.AutomationID, string(x.Stage), x.Step, x.Group,
		x.Message, x.Description, x.Location.Start, x.Location.End, x.Details, string(x.State), x.Assignee, x.Resolver,
		x.ResolutionGuideEntry, jsonArg(x.Extra), now, now, x.RunID, g.MaxPerRun)
	if err != nil {
		return store.Exception{}, c.db.mapErr(err, fmt.Sprintf("create exception %q", x.ID))
	}
	if rowsAffected(res) == 0 {
		return store.Exception{}, fmt.Errorf("run %q: guide entries have resolved %d exceptions of it, the most they may: %w", x.RunID, g.MaxPerRun, store.ErrResourceExhausted)
	}
	// The run's history: the exception raised, and resolved by the entry.
	if err := c.insertExceptionEvent(ctx, x, store.ExceptionPending, "", nil, now); err != nil {
		return store.Exception{}, err
	}
	if err := c.insertExceptionEvent(ctx, x, store.ExceptionResolved, x.Resolver, nil, now); err != nil {
		return store.Exception{}, err
	}
	x.CreateTime, x.UpdateTime = now, now
	return x, nil
}

// RecordGuidedException implements store.GuideEntries: one statement (one
// round trip), the bound checked in it.
func (db *DB) RecordGuidedException(ctx context.Context, g store.GuidedException) (store.Exception, error) {
	var out store.Exception
	err := db.tx(ctx, func(c conn) error {
		var err error
		out, err = c.recordGuided(ctx, g, db.now())
		return err
	})
	return out, err
}

// RecordGuidedExceptions implements store.GuideEntries: one transaction;
// on PostgreSQL, when the exceptions are of distinct runs, one statement
// (one round trip: the rows of exception_counts every insert updates are
// locked for that statement and its commit only).
func (db *DB) RecordGuidedExceptions(ctx context.Context, gs []store.GuidedException) ([]store.Exception, []error, error) {
	if db.d == store.Postgres && len(gs) > 1 {
		runs := make(map[string]bool, len(gs))
		for _, g := range gs {
			runs[g.Exception.RunID] = true
		}
		if len(runs) == len(gs) {
			return db.recordGuidedPG(ctx, gs)
		}
	}
	out := make([]store.Exception, len(gs))
	errs := make([]error, len(gs))
	err := db.tx(ctx, func(c conn) error {
		now := db.now()
		for i, g := range gs {
			x, err := c.recordGuided(ctx, g, now)
			switch {
			case errors.Is(err, store.ErrResourceExhausted):
				errs[i] = err
			case err != nil:
				return err
			default:
				out[i] = x
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, errs, nil
}

// recordGuidedPG writes exceptions of distinct runs in one INSERT … SELECT
// FROM (VALUES …), each row under its run's bound (the rows of one
// statement do not see each other: hence distinct runs).
func (db *DB) recordGuidedPG(ctx context.Context, gs []store.GuidedException) ([]store.Exception, []error, error) {
	out := make([]store.Exception, len(gs))
	errs := make([]error, len(gs))
	a := NewArgs(db.d)
	now := db.now()
	rows := make([]string, len(gs))
	for i, g := range gs {
		x := g.Exception
		if x.ID == "" {
			x.ID = store.NewID()
		}
		if x.Extra == nil {
			x.Extra = map[string]string{}
		}
		x.State = store.ExceptionResolved
		x.Resolver = "guideEntries/" + g.Entry
		x.ResolutionGuideEntry = g.Entry
		x.CreateTime, x.UpdateTime = now, now
		out[i] = x
		rows[i] = "(" + strings.Join([]string{
			a.Add(x.OrganizationID), a.Add(x.WorkspaceID), a.Add(x.ID), a.Add(x.RunID), a.Add(x.AutomationID), a.Add(string(x.Stage)),
			a.Add(int64(x.Step)) + "::bigint", a.Add(x.Group), a.Add(x.Message), a.Add(x.Description),
			a.Add(x.Location.Start) + "::bigint", a.Add(x.Location.End) + "::bigint", a.Add(x.Details) + "::bytea",
			a.Add(string(x.State)), a.Add(x.Assignee), a.Add(x.Resolver), a.Add(x.ResolutionGuideEntry), a.Add(jsonArg(x.Extra)),
			a.Add(now) + "::timestamptz", a.Add(int64(g.MaxPerRun)) + "::bigint",
		}, ", ") + ")"
	}
	q := `INSERT INTO exceptions (organization_id, workspace_id, id, run_id, automation_id, stage, step, group_id,
		message, description, loc_start, loc_end, details, state, assignee, resolver, resolution_guide_entry, extra, create_time, update_time)
		SELECT v.o, v.w, v.id, v.r, v.a, v.stage, v.step, v.g, v.msg, v.descr, v.ls, v.le, v.det, v.st, v.asg, v.res, v.rge, v.extra, v.t, v.t
		FROM (VALUES ` + strings.Join(rows, ", ") + `) AS v(o, w, id, r, a, stage, step, g, msg, descr, ls, le, det, st, asg, res, rge, extra, t, mx)
		WHERE (SELECT count(*) FROM exceptions e WHERE e.run_id = v.r AND e.resolution_guide_entry <> '') < v.mx
		RETURNING id, run_id, resolver, loc_start, loc_end, create_time`
	// The runs' history: each exception raised, and resolved by its entry.
	q = `WITH ins AS (` + q + `), ev AS (
		INSERT INTO run_events (run_id, create_time, kind, node_kind, state, reason, ref, loc_start, loc_end)
		SELECT ins.run_id, ins.create_time, 'exception', '` + store.ExceptionNodeKind + `', s.st, CASE WHEN s.st = ` + lit(store.ExceptionResolved) + ` THEN ins.resolver ELSE '' END,
			ins.id, ins.loc_start, ins.loc_end
		FROM ins CROSS JOIN (VALUES (1, ` + lit(store.ExceptionPending) + `), (2, ` + lit(store.ExceptionResolved) + `)) AS s(ord, st) ORDER BY ins.id, s.ord
	) SELECT id FROM ins`
	res, err := db.w.QueryContext(ctx, q, a.Values...)
	if err != nil {
		return nil, nil, db.mapErr(err, "record guided exceptions")
	}
	defer res.Close()
	written := map[string]bool{}
	for res.Next() {
		var id string
		if err := res.Scan(&id); err != nil {
			return nil, nil, err
		}
		written[id] = true
	}
	if err := res.Err(); err != nil {
		return nil, nil, db.mapErr(err, "record guided exceptions")
	}
	for i, x := range out {
		if !written[x.ID] {
			out[i] = store.Exception{}
			errs[i] = fmt.Errorf("run %q: guide entries have resolved %d exceptions of it, the most they may: %w", x.RunID, gs[i].MaxPerRun, store.ErrResourceExhausted)
		}
	}
	return out, errs, nil
}
