package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proserun/prose/store"
	"github.com/proserun/prose/store/pagination"
)

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

const excCols = `e.organization_id, e.workspace_id, e.id, e.run_id, e.automation_id, e.stage, e.step, e.group_id, e.message,
	e.description, e.loc_start, e.loc_end, e.details, e.state, e.assignee, e.resolver, e.extra, e.create_time, e.update_time`

const excSelect = `SELECT ` + excCols + ` FROM exceptions e`

func scanException(s interface{ Scan(...any) error }) (store.Exception, error) {
	var e store.Exception
	var stage, state string
	err := s.Scan(&e.OrganizationID, &e.WorkspaceID, &e.ID, &e.RunID, &e.AutomationID, &stage, &e.Step, &e.Group, &e.Message,
		&e.Description, &e.Location.Start, &e.Location.End, &e.Details, &state, &e.Assignee, &e.Resolver, jsonCol{&e.Extra},
		ts{&e.CreateTime}, ts{&e.UpdateTime})
	e.Stage, e.State = store.Stage(stage), store.ExceptionState(state)
	return e, err
}

func (c conn) insertException(ctx context.Context, e store.Exception, now time.Time) error {
	if e.State == "" {
		e.State = store.ExceptionPending
	}
	if e.Extra == nil {
		e.Extra = map[string]string{}
	}
	_, err := c.exec(ctx, `INSERT INTO exceptions (organization_id, workspace_id, id, run_id, automation_id, stage, step, group_id,
		message, description, loc_start, loc_end, details, state, assignee, resolver, extra, create_time, update_time)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.OrganizationID, e.WorkspaceID, e.ID, e.RunID, e.AutomationID, string(e.Stage), e.Step, e.Group,
		e.Message, e.Description, e.Location.Start, e.Location.End, e.Details, string(e.State), e.Assignee, e.Resolver,
		jsonArg(e.Extra), now, now)
	return c.db.mapErr(err, fmt.Sprintf("create exception %q", e.ID))
}

func (c conn) getException(ctx context.Context, org, ws, id string, lock bool) (store.Exception, error) {
	q := excSelect + ` WHERE e.organization_id = ? AND e.workspace_id = ? AND e.id = ?`
	if lock {
		q += c.db.forUpdate()
	}
	e, err := scanException(c.queryRow(ctx, q, org, ws, id))
	return e, c.db.mapErr(err, fmt.Sprintf("exception %q in workspace %q", id, ws))
}

// GetException implements store.Exceptions.
func (db *DB) GetException(ctx context.Context, org, ws, id string) (store.Exception, error) {
	return db.reader().getException(ctx, org, ws, id, false)
}

var exceptionSort = map[string]sortCol{
	"create_time": {Field: "create_time", Col: "e.create_time", Kind: keyTime},
}

// ListExceptions implements store.Exceptions.
func (db *DB) ListExceptions(ctx context.Context, req store.ListExceptionsRequest) (store.Page[store.Exception], int, error) {
	var zero store.Page[store.Exception]
	if req.Skip < 0 {
		return zero, 0, fmt.Errorf("%w: skip must not be negative", store.ErrInvalidArgument)
	}
	ks, err := newKeyset(nil, store.OrderBy{{Field: "create_time", Desc: true}}, exceptionSort, "e.id")
	if err != nil {
		return zero, 0, err
	}
	lq, err := newList(db.d, ks, req.Filter, req.PageToken, req.PageSize, excSelect, "exceptions", req.OrganizationID, req.WorkspaceID)
	if err != nil {
		return zero, 0, err
	}
	lq.cond("e.organization_id = " + lq.a.Add(req.OrganizationID))
	lq.cond("e.workspace_id = " + lq.a.Add(req.WorkspaceID))
	lq.offset = req.Skip
	r := db.reader()
	rows, err := r.queryArgs(ctx, lq.sql(), lq.a)
	if err != nil {
		return zero, 0, db.mapErr(err, "list exceptions")
	}
	items, err := func() ([]store.Exception, error) {
		defer rows.Close()
		var items []store.Exception
		for rows.Next() {
			e, err := scanException(rows)
			if err != nil {
				return nil, err
			}
			items = append(items, e)
		}
		return items, rows.Err()
	}()
	if err != nil {
		return zero, 0, err
	}
	total, err := db.countExceptions(ctx, req.OrganizationID, req.WorkspaceID, req.Filter)
	if err != nil {
		return zero, 0, err
	}
	return page(lq, items, func(e store.Exception) []string { return []string{timeKey(e.CreateTime), e.ID} }), total, nil
}

// where renders the workspace scope and filter of an exception query.
func excWhere(a *store.Args, org, ws string, f store.Filter) (string, error) {
	conds := []string{"e.organization_id = " + a.Add(org), "e.workspace_id = " + a.Add(ws)}
	if f != nil {
		c, err := f.SQL(a)
		if err != nil {
			return "", err
		}
		conds = append(conds, c)
	}
	return strings.Join(conds, " AND "), nil
}

func (db *DB) countExceptions(ctx context.Context, org, ws string, f store.Filter) (int, error) {
	a := store.NewArgs(db.d)
	where, err := excWhere(a, org, ws, f)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.r.QueryRowContext(ctx, `SELECT count(*) FROM exceptions e WHERE `+where, a.Values...).Scan(&n); err != nil {
		return 0, db.mapErr(err, "count exceptions")
	}
	return n, nil
}

// countBy counts matching exceptions grouped by a column, paged by key.
func (db *DB) countBy(ctx context.Context, col, what string, req store.CountRequest) (store.CountPage, error) {
	var out store.CountPage
	size := pagination.Normalize(req.PageSize)
	bind := pagination.Bind("count-"+what, req.OrganizationID, req.WorkspaceID, "filter="+store.FilterKey(req.Filter))
	keys, err := pagination.Decode(req.PageToken, bind, 1)
	if err != nil {
		return out, err
	}
	a := store.NewArgs(db.d)
	where, err := excWhere(a, req.OrganizationID, req.WorkspaceID, req.Filter)
	if err != nil {
		return out, err
	}
	// One grouped scan gives the page and the totals over all pages (the
	// keys are few: groups, automations), instead of a second scan for the
	// totals.
	q := `SELECT ` + col + `, count(*) FROM exceptions e WHERE ` + where + ` GROUP BY ` + col + ` ORDER BY ` + col
	rows, err := db.r.QueryContext(ctx, q, a.Values...)
	if err != nil {
		return out, db.mapErr(err, "count exceptions")
	}
	defer rows.Close()
	for rows.Next() {
		var c store.Count
		if err := rows.Scan(&c.Key, &c.Count); err != nil {
			return out, err
		}
		out.TotalKeys++
		out.TotalCount += c.Count
		if (keys == nil || c.Key > keys[0]) && len(out.Counts) <= size {
			out.Counts = append(out.Counts, c)
		}
	}
	if err := rows.Err(); err != nil {
		return out, err
	}
	if len(out.Counts) > size {
		out.Counts = out.Counts[:size]
		out.NextPageToken = pagination.Encode(bind, []string{out.Counts[size-1].Key})
	}
	return out, nil
}

// CountExceptionsByGroup implements store.Exceptions.
func (db *DB) CountExceptionsByGroup(ctx context.Context, req store.CountRequest) (store.CountPage, error) {
	return db.countBy(ctx, "e.group_id", "group", req)
}

// CountExceptionsByAutomation implements store.Exceptions.
func (db *DB) CountExceptionsByAutomation(ctx context.Context, req store.CountRequest) (store.CountPage, error) {
	return db.countBy(ctx, "e.automation_id", "automation", req)
}

// SetExceptionDescription implements store.Exceptions.
func (db *DB) SetExceptionDescription(ctx context.Context, org, ws, id, description string) error {
	res, err := db.writer().exec(ctx, `UPDATE exceptions SET description = ?, update_time = ? WHERE organization_id = ? AND workspace_id = ? AND id = ?`,
		description, db.now(), org, ws, id)
	if err != nil {
		return db.mapErr(err, "set exception description")
	}
	if rowsAffected(res) == 0 {
		return fmt.Errorf("exception %q in workspace %q: %w", id, ws, store.ErrNotFound)
	}
	return nil
}

// transition moves an exception from one state to another, conditionally,
// then lets then move its run. Exactly one of concurrent transitions from the
// same state succeeds.
func (db *DB) transition(ctx context.Context, org, ws, id string, from, to store.ExceptionState, set string, setArgs []any,
	then func(c conn, e store.Exception, now time.Time) error) (store.Exception, error) {
	now := db.now()
	var out store.Exception
	err := db.tx(ctx, func(c conn) error {
		e, err := c.getException(ctx, org, ws, id, true)
		if err != nil {
			return err
		}
		if e.State != from {
			return fmt.Errorf("exception %q is %s, not %s: %w", id, e.State, from, store.ErrFailedPrecondition)
		}
		args := append([]any{string(to), now}, setArgs...)
		args = append(args, org, ws, id, string(from))
		res, err := c.exec(ctx, `UPDATE exceptions SET state = ?, update_time = ?`+set+`
			WHERE organization_id = ? AND workspace_id = ? AND id = ? AND state = ?`, args...)
		if err != nil {
			return db.mapErr(err, "update exception")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("exception %q changed concurrently: %w", id, store.ErrFailedPrecondition)
		}
		if then != nil {
			if err := then(c, e, now); err != nil {
				return err
			}
		}
		out, err = c.getException(ctx, org, ws, id, false)
		return err
	})
	return out, err
}

// ResolveException implements store.Exceptions.
func (db *DB) ResolveException(ctx context.Context, org, ws, id string, r store.Resolution) (store.Exception, error) {
	return db.transition(ctx, org, ws, id, store.ExceptionPending, store.ExceptionResolved, ", resolver = ?", []any{r.Resolver},
		func(c conn, e store.Exception, now time.Time) error {
			// The run goes on where it stopped; a stopped run keeps the
			// guidance for when it is continued.
			if _, err := c.exec(ctx, `UPDATE runs SET state = 'pending', resolution = ?, state_time = ?, update_time = ?
				WHERE id = ? AND state = 'awaiting_guidance' AND exception_id = ?`, r.Data, now, now, e.RunID, e.ID); err != nil {
				return db.mapErr(err, "resume run")
			}
			_, err := c.exec(ctx, `UPDATE runs SET resolution = ?, update_time = ? WHERE id = ? AND state = 'stopped' AND exception_id = ?`,
				r.Data, now, e.RunID, e.ID)
			return db.mapErr(err, "keep guidance")
		})
}

// ArchiveException implements store.Exceptions.
func (db *DB) ArchiveException(ctx context.Context, org, ws, id string) (store.Exception, error) {
	return db.transition(ctx, org, ws, id, store.ExceptionPending, store.ExceptionArchived, "", nil,
		func(c conn, e store.Exception, now time.Time) error {
			_, err := c.exec(ctx, `UPDATE runs SET state = 'stopped', reason = ?, state_time = ?, update_time = ?
				WHERE id = ? AND state = 'awaiting_guidance' AND exception_id = ?`, "exception "+e.ID+" archived", now, now, e.RunID, e.ID)
			return db.mapErr(err, "abandon run")
		})
}

// UnarchiveException implements store.Exceptions.
func (db *DB) UnarchiveException(ctx context.Context, org, ws, id string) (store.Exception, error) {
	return db.transition(ctx, org, ws, id, store.ExceptionArchived, store.ExceptionPending, "", nil,
		func(c conn, e store.Exception, now time.Time) error {
			// Only a run still stopped on this exception can wait for it
			// again; a run that was continued (or finished) since has moved
			// on, and the exception stays archived.
			res, err := c.exec(ctx, `UPDATE runs SET state = 'awaiting_guidance', reason = '', state_time = ?, update_time = ?
				WHERE id = ? AND state = 'stopped' AND exception_id = ?`, now, now, e.RunID, e.ID)
			if err != nil {
				return db.mapErr(err, "run waits again")
			}
			if rowsAffected(res) == 0 {
				return fmt.Errorf("exception %q: its run %q is no longer stopped on it: %w", id, e.RunID, store.ErrFailedPrecondition)
			}
			return nil
		})
}

// AssignException implements store.Exceptions.
func (db *DB) AssignException(ctx context.Context, org, ws, id, assignee string) (store.Exception, error) {
	var out store.Exception
	err := db.tx(ctx, func(c conn) error {
		e, err := c.getException(ctx, org, ws, id, true)
		if err != nil {
			return err
		}
		if e.State == store.ExceptionResolved {
			return fmt.Errorf("exception %q is RESOLVED, which is final: %w", id, store.ErrFailedPrecondition)
		}
		res, err := c.exec(ctx, `UPDATE exceptions SET assignee = ?, update_time = ? WHERE organization_id = ? AND workspace_id = ? AND id = ? AND state <> ?`,
			assignee, db.now(), org, ws, id, string(store.ExceptionResolved))
		if err != nil {
			return db.mapErr(err, "assign exception")
		}
		if rowsAffected(res) == 0 {
			return fmt.Errorf("exception %q changed concurrently: %w", id, store.ErrFailedPrecondition)
		}
		out, err = c.getException(ctx, org, ws, id, false)
		return err
	})
	return out, err
}

// ListExceptionIDs implements store.Exceptions.
func (db *DB) ListExceptionIDs(ctx context.Context, org, ws string, f store.Filter, max int) ([]string, error) {
	a := store.NewArgs(db.d)
	where, err := excWhere(a, org, ws, f)
	if err != nil {
		return nil, err
	}
	rows, err := db.r.QueryContext(ctx, `SELECT e.id FROM exceptions e WHERE `+where+` ORDER BY e.create_time, e.id LIMIT `+strconv.Itoa(max), a.Values...)
	if err != nil {
		return nil, db.mapErr(err, "list exception ids")
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
