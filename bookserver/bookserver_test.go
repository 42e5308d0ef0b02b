package bookserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/proserun/prose/bookserver"
	"github.com/proserun/prose/bookserver/booktest"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

// counterBook has a mutation (a counter: each new call id counts once), a
// procedure with an optional number input, and one that fails internally.
func counterBook() *bookserver.Book {
	var n atomic.Int64
	b := bookserver.New("test.counter", "1.0.0")
	b.Mutation("count a visitor (the visit number)", []bookserver.Input{{Name: "visitor", Type: bookserver.Text}},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			return bookserver.Outputs{"visit number": lang.Int(n.Add(1))}, nil
		})
	b.Procedure("double a number (the double)", []bookserver.Input{{Name: "number", Type: bookserver.Number}, {Name: "offset", Type: bookserver.Number, Optional: true}},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			x, _ := c.Number("number")
			d, err := x.Add(x)
			if err != nil {
				return nil, err
			}
			if o, ok := c.Number("offset"); ok {
				d, _ = d.Add(o)
			}
			return bookserver.Outputs{"double": lang.Num(d)}, nil
		})
	b.Procedure("break a thing (the result)", nil,
		func(context.Context, *bookserver.Call) (bookserver.Outputs, error) {
			return nil, errors.New("database password is hunter2")
		})
	return b
}

func TestConformanceOfBookserverBooks(t *testing.T) {
	b := counterBook()
	booktest.Run(t, b.Descriptor(""), b,
		booktest.Case{Procedure: "count_a_visitor", Inputs: map[string]lang.Value{"visitor": lang.Text("ana")}},
		booktest.Case{Procedure: "double_a_number", Inputs: map[string]lang.Value{"number": lang.Num(lang.MustNumber("1.25"))},
			Want: map[string]lang.Value{"double": lang.Num(lang.MustNumber("2.50"))}},
		booktest.Case{Procedure: "double_a_number", Inputs: map[string]lang.Value{"number": lang.Int(2), "offset": lang.Int(1)},
			Want: map[string]lang.Value{"double": lang.Int(5)}},
		booktest.Case{Procedure: "double_a_number", Inputs: map[string]lang.Value{"number": lang.Text("two")},
			WantError: `the input "number" must be a number value`},
	)
}

// TestCalls calls a bookserver book with the platform's client and checks
// each answer's meaning for the run.
func TestCalls(t *testing.T) {
	srv := httptest.NewServer(counterBook())
	defer srv.Close()
	c, ctx := books.NewClient(), context.Background()

	first, err := c.Call(ctx, srv.URL, "count_a_visitor", "step-1", map[string]lang.Value{"visitor": lang.Text("ana")})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := c.Call(ctx, srv.URL, "count_a_visitor", "step-1", map[string]lang.Value{"visitor": lang.Text("ana")})
	next, _ := c.Call(ctx, srv.URL, "count_a_visitor", "step-2", map[string]lang.Value{"visitor": lang.Text("ana")})
	if first["visit number"].AsNumber().String() != "1" || again["visit number"].AsNumber().String() != "1" || next["visit number"].AsNumber().String() != "2" {
		t.Errorf("visit numbers %v %v %v, want 1 1 2 (a repeated call id gets its first answer)", first, again, next)
	}

	var be *books.BookError
	if _, err := c.Call(ctx, srv.URL, "count_a_visitor", "", nil); !errors.As(err, &be) || !strings.Contains(be.Message, `"visitor" is missing`) {
		t.Errorf("missing input: %v, want a book error", err)
	}
	// An error that is not the book's refusal is not shown to the run.
	var ce *books.CallError
	if _, err := c.Call(ctx, srv.URL, "break_a_thing", "", nil); !errors.As(err, &ce) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("internal failure: %v, want a call error without the internal message", err)
	}
	if _, err := c.Call(ctx, srv.URL, "no_such", "", nil); !errors.As(err, &be) || !strings.Contains(be.Message, "no procedure") {
		t.Errorf("unknown procedure: %v", err)
	}

	for _, tc := range []struct {
		method, path, body string
		status             int
	}{
		{"GET", "/procedures/double_a_number:call", "", 405},
		{"POST", "/procedures/double_a_number", `{}`, 404},
		{"POST", "/procedures/double_a_number:call", `{"inputs":`, 400},
		{"POST", "/procedures/double_a_number:call", `{"inputs":{"number":1e999999999999}}`, 400},
		{"POST", "/procedures/double_a_number:call", strings.Repeat(" ", bookserver.MaxRequestBytes+1), 413},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Message string } `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		if resp.StatusCode != tc.status || body.Error.Message == "" {
			t.Errorf("%s %s: %d %q, want %d with a message", tc.method, tc.path, resp.StatusCode, body.Error.Message, tc.status)
		}
	}
}

// TestCheckFindsBrokenBooks: the conformance check fails books that break
// the protocol.
func TestCheckFindsBrokenBooks(t *testing.T) {
	good := counterBook()
	desc := good.Descriptor("")
	cases := []booktest.Case{{Procedure: "count_a_visitor", Inputs: map[string]lang.Value{"visitor": lang.Text("ana")}}}
	broken := map[string]http.Handler{
		// answers every call, even malformed ones, with no outputs
		"accepts everything": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"outputs":{}}`))
		}),
		// counts again for a repeated call id
		"not idempotent": func() http.Handler {
			var n atomic.Int64
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "count_a_visitor") {
					var req struct {
						Inputs map[string]any `json:"inputs"`
					}
					if json.NewDecoder(r.Body).Decode(&req) == nil && req.Inputs["visitor"] != nil {
						_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]any{"visit number": n.Add(1)}})
						return
					}
				}
				good.ServeHTTP(w, r)
			})
		}(),
	}
	for name, h := range broken {
		if errs := booktest.Check(desc, h, cases...); len(errs) == 0 {
			t.Errorf("%s: Check found no problem", name)
		}
	}
	if errs := booktest.Check(desc, good, cases...); len(errs) != 0 {
		t.Errorf("the good book: %v", errs)
	}
	noName := good.Descriptor("")
	noName.Name = ""
	if errs := booktest.Check(noName, good); len(errs) == 0 {
		t.Error("a descriptor without a name passed")
	}
	if errs := booktest.Check(desc, good, booktest.Case{Procedure: "count_a_visitor", WantError: "x"}); len(errs) == 0 {
		t.Error("an unmet WantError passed")
	}
}
