package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	_ "modernc.org/sqlite"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/store"
	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// TestRewriteColumnPages: rewriteColumn rewrites every non-null value of a
// column exactly once, page after page (a composite text key; pages of 7
// rows over 103), and leaves NULLs alone, on both backends.
func TestRewriteColumnPages(t *testing.T) {
	defer func(n int) { rewritePage = n }(rewritePage)
	rewritePage = 7
	run := func(t *testing.T, db *sql.DB, d store.Dialect, blob string) {
		ctx := context.Background()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, `CREATE TEMP TABLE rw (a TEXT NOT NULL, b TEXT NOT NULL, v `+blob+`, PRIMARY KEY (a, b))`); err != nil {
			t.Fatal(err)
		}
		ins := `INSERT INTO rw (a, b, v) VALUES (?, ?, ?)`
		if d == store.Postgres {
			ins = `INSERT INTO rw (a, b, v) VALUES ($1, $2, $3)`
		}
		for i := range 103 {
			var v []byte
			if i%10 != 3 {
				v = fmt.Appendf(nil, "%d", i)
			}
			if _, err := tx.ExecContext(ctx, ins, fmt.Sprint(i%4), fmt.Sprintf("k%03d", i), v); err != nil {
				t.Fatal(err)
			}
		}
		calls := 0
		if err := rewriteColumn(ctx, tx, d, "rw", "v", []string{"a", "b"}, func(b []byte) ([]byte, error) {
			calls++
			return append(b, '!'), nil
		}); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT b, v FROM rw ORDER BY b`)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		n := 0
		for rows.Next() {
			var k string
			var v []byte
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			want := ""
			if n%10 != 3 {
				want = fmt.Sprintf("%d!", n)
			}
			if string(v) != want || (want == "") != (v == nil) {
				t.Errorf("%s: %q, want %q", k, v, want)
			}
			n++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if n != 103 || calls != 93 {
			t.Fatalf("%d rows, %d rewritten; want 103 and 93", n, calls)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "rw.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		db.SetMaxOpenConns(1)
		run(t, db, store.SQLite, "BLOB")
	})
	t.Run("postgres", func(t *testing.T) {
		url := os.Getenv("PROSE_TEST_POSTGRES_URL")
		if url == "" {
			t.Skip("PROSE_TEST_POSTGRES_URL is not set")
		}
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = db.Close() }()
		run(t, db, store.Postgres, "BYTEA")
	})
}

// TestRenumberOfVersion21: an event payload kept as the platform's Event
// becomes the persist.v1.Event with the same payload, and back; a payload
// that is not protobuf, or whose members do not decode, is an error.
func TestRenumberOfVersion21(t *testing.T) {
	old, err := proto.Marshal(&platformv1.Event{Exception: "organizations/o/workspaces/w/exceptions/x",
		Payload: &platformv1.Event_ToolCallRequest{ToolCallRequest: &platformv1.ToolCallRequest{ToolCallId: "t", DisplayName: "d", Input: "{}"}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := EventFromV21(old)
	if err != nil {
		t.Fatal(err)
	}
	got := &persistv1.Event{}
	want := &persistv1.Event{Exception: "organizations/o/workspaces/w/exceptions/x",
		Payload: &persistv1.Event_ToolCallRequest{ToolCallRequest: &persistv1.ToolCallRequest{ToolCallId: "t", DisplayName: "d", Input: "{}"}}}
	if err := proto.Unmarshal(b, got); err != nil || !proto.Equal(got, want) {
		t.Fatalf("got %v (%v), want %v", got, err, want)
	}
	back, err := EventToV21(b)
	if err != nil || string(back) != string(old) {
		t.Fatalf("down: %x (%v), want %x", back, err, old)
	}
	for name, b := range map[string][]byte{
		"not protobuf":      {0xff, 0xff, 0xff},
		"a truncated field": {0x2a, 0x05, 0x0a},
		// user_message (5) holding a user (1) of invalid UTF-8.
		"a member that does not decode": protowire.AppendBytes(protowire.AppendTag(nil, 5, protowire.BytesType),
			protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), []byte{0xff})),
	} {
		if _, err := EventFromV21(b); err == nil {
			t.Errorf("%s: converted", name)
		}
	}
}
