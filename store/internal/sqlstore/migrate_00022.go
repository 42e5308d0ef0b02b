package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/pressly/goose/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Migration 00022 moves agent conversation events and automation details
// off the public API's messages onto private prose.persist.v1 ones, as
// 00014 did for runs:
//
//   - events.payload was a prose.platform.v1.Event without its name, state
//     and times; it becomes a prose.persist.v1.Event, whose payload members
//     are numbered 1-7 and its exception 8 (5-12 in the platform's Event);
//   - automations.details and automations.published_details were a
//     prose.platform.v1.Automation holding only connections (7),
//     input_specs (11), activation_state (17), default_inputs (18) and
//     marked_outputs (19); they become a prose.persist.v1.AutomationDetails
//     (1-5);
//   - trigger_instances.configuration was a prose.platform.v1.TriggerInstance
//     holding only configuration (7) and filter_expression (12); it becomes a
//     prose.persist.v1.TriggerConfig (1, 2).
//
// schedules.config (a prose.platform.v1.ScheduleConfig) became a
// prose.persist.v1.ScheduleConfig with the same numbers and encoding: its
// rows read back as they are, and this migration leaves them.
//
// The members' own messages (UserMessage, AutomationInputSpec, Value, …)
// are mirrored in persist.v1 with the same numbers, so only the top-level
// numbers change: the rows are renumbered on the wire, with the old
// numbers frozen here as they were when the rows were written, and each
// rewritten row is checked to decode as the new message.

// v21Event maps the platform Event's numbers (as of migration 00021) to
// persist.v1.Event's; its name (1), state (2) and times (3, 4) were never
// kept.
var v21Event = map[protowire.Number]protowire.Number{5: 1, 6: 2, 7: 3, 8: 4, 9: 5, 10: 6, 11: 7, 12: 8}

// v21AutomationDetails maps the platform Automation's numbers (as of
// migration 00021) of the fields kept as details to AutomationDetails'.
var v21AutomationDetails = map[protowire.Number]protowire.Number{7: 1, 11: 2, 17: 3, 18: 4, 19: 5}

// v21TriggerConfig maps the platform TriggerInstance's numbers (as of
// migration 00021) of the fields kept as configuration to TriggerConfig's.
var v21TriggerConfig = map[protowire.Number]protowire.Number{7: 1, 12: 2}

func migration00022(d store.Dialect) *goose.Migration {
	type column struct {
		table, col string
		keys       []string
		up         func([]byte) ([]byte, error)
		down       func([]byte) ([]byte, error)
	}
	wsKey := []string{"organization_id", "workspace_id", "id"} // automations' and trigger_instances' key

	cols := []column{
		{"events", "payload", []string{"run_id", "agent_id", "id"}, EventFromV21, EventToV21},
		{"automations", "details", wsKey, AutomationDetailsFromV21, AutomationDetailsToV21},
		{"automations", "published_details", wsKey, AutomationDetailsFromV21, AutomationDetailsToV21},
		{"trigger_instances", "configuration", wsKey, TriggerConfigFromV21, TriggerConfigToV21},
	}
	apply := func(up bool) func(ctx context.Context, tx *sql.Tx) error {
		return func(ctx context.Context, tx *sql.Tx) error {
			for _, c := range cols {
				conv := c.down
				if up {
					conv = c.up
				}
				if err := rewriteColumn(ctx, tx, d, c.table, c.col, c.keys, conv); err != nil {
					return err
				}
			}
			return nil
		}
	}
	return goose.NewGoMigration(22, &goose.GoFunc{RunTx: apply(true)}, &goose.GoFunc{RunTx: apply(false)})
}

// rewritePage is how many rows rewriteColumn holds in memory at a time (a
// variable for its test).
var rewritePage = 500

// rewriteColumn rewrites every non-null value of table.col with conv; keys
// are the table's primary key columns (text). It reads the rows in pages in
// key order (a keyset: the next page starts after the last key read), so a
// large table is not held in memory; the whole rewrite is the migration's
// one transaction.
func rewriteColumn(ctx context.Context, tx *sql.Tx, d store.Dialect, table, col string, keys []string, conv func([]byte) ([]byte, error)) error {
	cols := strings.Join(keys, ", ")
	after := make([]string, len(keys))
	where := make([]string, len(keys))
	for i, k := range keys {
		after[i] = placeholder(d, i+1)
		where[i] = fmt.Sprintf("%s = %s", k, placeholder(d, i+2))
	}
	// The table, column and key names are this package's constants.
	first := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s IS NOT NULL ORDER BY %s LIMIT %d`, //nolint:gosec // names, not values
		cols, col, table, col, cols, rewritePage)
	next := fmt.Sprintf(`SELECT %s, %s FROM %s WHERE %s IS NOT NULL AND (%s) > (%s) ORDER BY %s LIMIT %d`, //nolint:gosec // names, not values
		cols, col, table, col, cols, strings.Join(after, ", "), cols, rewritePage)
	update := fmt.Sprintf(`UPDATE %s SET %s = %s WHERE %s`, //nolint:gosec // names, not values
		table, col, placeholder(d, 1), strings.Join(where, " AND "))
	type row struct {
		key  []any
		data []byte
	}
	var last []any
	for {
		var page []row
		err := func() error {
			q, args := first, []any(nil)
			if last != nil {
				q, args = next, last
			}
			rows, err := tx.QueryContext(ctx, q, args...)
			if err != nil {
				return err
			}
			defer func() { _ = rows.Close() }()
			for rows.Next() {
				key := make([]string, len(keys))
				dest := make([]any, 0, len(keys)+1)
				for i := range key {
					dest = append(dest, &key[i])
				}
				var data []byte
				if err := rows.Scan(append(dest, &data)...); err != nil {
					return err
				}
				r := row{key: make([]any, len(keys)), data: data}
				for i := range key {
					r.key[i] = key[i]
				}
				page = append(page, r)
			}
			return rows.Err()
		}()
		if err != nil {
			return fmt.Errorf("%s.%s: %w", table, col, err)
		}
		for _, r := range page {
			b, err := conv(r.data)
			if err != nil {
				return fmt.Errorf("%s %v: %s: %w", table, r.key, col, err)
			}
			if _, err := tx.ExecContext(ctx, update, append([]any{b}, r.key...)...); err != nil {
				return fmt.Errorf("%s %v: %w", table, r.key, err)
			}
		}
		if len(page) < rewritePage {
			return nil
		}
		last = page[len(page)-1].key
	}
}

func placeholder(d store.Dialect, n int) string {
	if d == store.Postgres {
		return fmt.Sprintf("$%d", n)
	}
	return "?"
}

// EventFromV21 converts an event payload kept as a prose.platform.v1.Event
// to a prose.persist.v1.Event.
func EventFromV21(b []byte) ([]byte, error) {
	return renumber(b, v21Event, &persistv1.Event{})
}

// EventToV21 converts back (the down migration).
func EventToV21(b []byte) ([]byte, error) { return renumber(b, invert(v21Event), nil) }

// AutomationDetailsFromV21 converts automation details kept as a
// prose.platform.v1.Automation to a prose.persist.v1.AutomationDetails.
func AutomationDetailsFromV21(b []byte) ([]byte, error) {
	return renumber(b, v21AutomationDetails, &persistv1.AutomationDetails{})
}

// AutomationDetailsToV21 converts back (the down migration).
func AutomationDetailsToV21(b []byte) ([]byte, error) {
	return renumber(b, invert(v21AutomationDetails), nil)
}

// TriggerConfigFromV21 converts a trigger instance's configuration kept as
// a prose.platform.v1.TriggerInstance to a prose.persist.v1.TriggerConfig.
func TriggerConfigFromV21(b []byte) ([]byte, error) {
	return renumber(b, v21TriggerConfig, &persistv1.TriggerConfig{})
}

// TriggerConfigToV21 converts back (the down migration).
func TriggerConfigToV21(b []byte) ([]byte, error) { return renumber(b, invert(v21TriggerConfig), nil) }

// renumber re-encodes the top-level fields of b whose numbers are keys of
// m under their new numbers (values kept byte for byte, order kept); the
// other fields are dropped. With check, the result must decode as it.
func renumber(b []byte, m map[protowire.Number]protowire.Number, check proto.Message) ([]byte, error) {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		if to, ok := m[num]; ok {
			out = protowire.AppendTag(out, to, typ)
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	if check != nil {
		if err := proto.Unmarshal(out, check); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func invert(m map[protowire.Number]protowire.Number) map[protowire.Number]protowire.Number {
	out := make(map[protowire.Number]protowire.Number, len(m))
	for k, v := range m {
		out[v] = k
	}
	return out
}
