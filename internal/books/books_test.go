package books_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	bookv1 "github.com/proserun/prose/gen/prose/book/v1"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

var ws = books.Workspace{OrganizationID: "o1", WorkspaceID: "w1"}

func externalBook(endpoint string) *bookv1.Book {
	text := &bookv1.ConceptType{Kind: &bookv1.ConceptType_ScalarType{ScalarType: bookv1.ConceptScalarType_ConceptScalarTypeText}}
	return &bookv1.Book{
		Name:     "acme.mail",
		Version:  "1.2.0",
		Endpoint: endpoint,
		Tags:     []string{"email"},
		Procedures: []*bookv1.Procedure{{
			Id:        "send_email",
			Signature: books.Signature("send an email to a recipient"),
			Inputs: []*bookv1.Concept{
				{NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformNP{books.Phrase("recipient")}}, Type: text},
				{NounPhrases: &bookv1.NounPhrases{NounPhrases: []*platformNP{books.Phrase("subject")}}, Type: text},
			},
			IsMutation: true,
		}},
	}
}

func TestParseSentence(t *testing.T) {
	cases := []struct {
		in   string
		want books.Sentence
	}{
		{"generate an id", books.Sentence{Verbs: []string{"generate"}, Object: books.Slot{Words: []string{"id"}}}},
		{`send an email to "ana@example.com"`, books.Sentence{Verbs: []string{"send"}, Object: books.Slot{Words: []string{"email"}}, Preposition: "to", Target: books.Slot{IsValue: true}}},
		{"format 12.5 as text", books.Sentence{Verbs: []string{"format"}, Object: books.Slot{IsValue: true}, Preposition: "as", Target: books.Slot{Words: []string{"text"}}}},
		{"get the current time (the current time)", books.Sentence{Verbs: []string{"get"}, Object: books.Slot{Words: []string{"current", "time"}}}},
	}
	for _, c := range cases {
		got := books.ParseSentence(c.in)
		if !equalSentence(got, c.want) {
			t.Errorf("ParseSentence(%q) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

func equalSentence(a, b books.Sentence) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestSignature(t *testing.T) {
	sig := books.Signature("format a number as text (the formatted number)")
	if got := sig.GetVerbs(); len(got) != 1 || got[0] != "format" {
		t.Errorf("verbs = %v", got)
	}
	if sig.GetPreposition() != "as" || books.PhraseText(sig.GetObject().GetNounPhrases()[0]) != "number" ||
		books.PhraseText(sig.GetTarget().GetNounPhrases()[0]) != "text" {
		t.Errorf("signature = %v", sig)
	}
	if len(sig.GetOutputs()) != 1 || books.PhraseText(sig.GetOutputs()[0].GetNounPhrases()[0]) != "formatted number" {
		t.Errorf("outputs = %v", sig.GetOutputs())
	}
}

func TestMatch(t *testing.T) {
	ctx := context.Background()
	r := books.NewRegistry()
	if _, err := r.Register(ctx, ws, externalBook("http://example.invalid/book"), ""); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		sentence string
		ws       books.Workspace
		wantBook string
		wantProc string
		wantErr  error
	}{
		{"get the new id", ws, "standard", "new_id", nil},
		{"get a new id", ws, "standard", "new_id", nil},
		{"get the current time", books.Workspace{}, "standard", "get_current_time", nil},
		{"format 1234.5 as text", ws, "standard", "format_number", nil},
		{"format the total as text", ws, "standard", "format_number", nil}, // a fact fills the input
		{`count the words of "a b c"`, ws, "standard", "count_words", nil},
		{`send an email to "ana@example.com"`, ws, "acme.mail", "send_email", nil},
		{`send an email to "ana@example.com"`, books.Workspace{}, "", "", books.ErrNoMatch}, // not registered there
		{`send a letter to "ana@example.com"`, ws, "", "", books.ErrNoMatch},                // object is no input: must be named
		{"get the new id for the order", ws, "", "", books.ErrNoMatch},                      // preposition differs
		{"paint the fence", ws, "", "", books.ErrNoMatch},
	}
	for _, c := range cases {
		m, err := r.Match(ctx, c.ws, books.ParseSentence(c.sentence))
		if c.wantErr != nil {
			if !errors.Is(err, c.wantErr) {
				t.Errorf("Match(%q) err = %v, want %v", c.sentence, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Match(%q): %v", c.sentence, err)
			continue
		}
		if m.Ref.Book != c.wantBook || m.Ref.Procedure != c.wantProc {
			t.Errorf("Match(%q) = %+v, want %s/%s", c.sentence, m.Ref, c.wantBook, c.wantProc)
		}
	}
}

func TestMatchAmbiguous(t *testing.T) {
	ctx := context.Background()
	r := books.NewRegistry()
	b1 := externalBook("http://a.invalid")
	b2 := externalBook("http://b.invalid")
	b2.Name = "other.mail"
	for _, b := range []*bookv1.Book{b1, b2} {
		if _, err := r.Register(ctx, ws, b, ""); err != nil {
			t.Fatal(err)
		}
	}
	_, err := r.Match(ctx, ws, books.ParseSentence(`send an email to "x@y.z"`))
	if !errors.Is(err, books.ErrAmbiguous) {
		t.Fatalf("err = %v, want ErrAmbiguous", err)
	}
}

func TestRegistryLifecycle(t *testing.T) {
	ctx := context.Background()
	r := books.NewRegistry()
	b := externalBook("https://books.example.com/mail")

	first, err := r.Register(ctx, ws, b, "req-1")
	if err != nil {
		t.Fatal(err)
	}
	// Retry with the same request id: the first result, no error.
	again, err := r.Register(ctx, ws, b, "req-1")
	if err != nil || again.GetName() != first.GetName() {
		t.Fatalf("retry: %v, %v", again, err)
	}
	if _, err := r.Register(ctx, ws, b, "req-2"); !errors.Is(err, books.ErrAlreadyExists) {
		t.Fatalf("duplicate: err = %v", err)
	}
	std := books.Standard(nil).Book
	std.Endpoint = "https://x.example.com"
	if _, err := r.Register(ctx, ws, std, ""); !errors.Is(err, books.ErrAlreadyExists) {
		t.Fatalf("built-in shadowing: err = %v", err)
	}
	bad := externalBook("ftp://nope")
	bad.Version = ""
	if _, err := r.Register(ctx, ws, bad, ""); !errors.Is(err, books.ErrInvalidArgument) {
		t.Fatalf("invalid: err = %v", err)
	}

	newer := externalBook("https://books.example.com/mail2")
	newer.Version = "1.10.0"
	if _, err := r.Register(ctx, ws, newer, ""); err != nil {
		t.Fatal(err)
	}
	all, err := r.WorkspaceBooks(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range all {
		got = append(got, b.GetName()+"@"+b.GetVersion())
	}
	want := []string{"acme.mail@1.2.0", "acme.mail@1.10.0", "standard@1.0.0"}
	if !equalStrings(got, want) {
		t.Errorf("WorkspaceBooks = %v, want %v", got, want)
	}
	if l := books.Latest(all); len(l) != 2 || l[0].GetVersion() != "1.10.0" {
		t.Errorf("Latest = %v", l)
	}
	if other, _ := r.WorkspaceBooks(ctx, books.Workspace{OrganizationID: "o1", WorkspaceID: "w2"}); len(other) != 1 {
		t.Errorf("other workspace sees %d books, want the built-in one", len(other))
	}

	upd := externalBook("https://books.example.com/mail3")
	if err := r.Update(ctx, ws, upd); err != nil {
		t.Fatal(err)
	}
	if got, _ := r.Book(ctx, ws, "acme.mail", "1.2.0"); got.GetEndpoint() != "https://books.example.com/mail3" {
		t.Errorf("after update endpoint = %q", got.GetEndpoint())
	}
	if err := r.Unregister(ctx, ws, "acme.mail", "1.2.0"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Book(ctx, ws, "acme.mail", "1.2.0"); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("after delete: err = %v", err)
	}
	if err := r.Unregister(ctx, ws, "acme.mail", "1.2.0"); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("second delete: err = %v", err)
	}
	if err := r.Unregister(ctx, ws, books.StandardName, books.StandardVersion); !errors.Is(err, books.ErrInvalidArgument) {
		t.Errorf("delete built-in: err = %v", err)
	}
	if tags := r.Tags(); !equalStrings(tags, []string{"built-in", "utilities"}) {
		t.Errorf("Tags = %v", tags)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestStandardBook(t *testing.T) {
	ctx := context.Background()
	fixed := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	r := books.NewRegistry(books.WithBuiltins(books.Standard(func() time.Time { return fixed })))
	call := func(proc string, in map[string]lang.Value) (map[string]lang.Value, error) {
		return r.Call(ctx, books.Workspace{}, books.ProcedureRef{Book: "standard", Version: "1.0.0", Procedure: proc}, "", in)
	}

	out, err := call("new_id", nil)
	if err != nil {
		t.Fatal(err)
	}
	if id := out["id"].AsText(); !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(id) {
		t.Errorf("id = %q", id)
	}

	out, err = call("get_current_time", nil)
	if err != nil || !out["current time"].AsDateTime().Equal(fixed) {
		t.Errorf("current time = %v, %v", out["current time"], err)
	}

	out, err = call("format_number", map[string]lang.Value{"number": lang.Num(lang.MustNumber("1234567.125"))})
	if err != nil || out["formatted number"].AsText() != "1,234,567.13" {
		t.Errorf("format (defaults) = %v, %v", out["formatted number"], err)
	}
	out, err = call("format_number", map[string]lang.Value{
		"number": lang.Num(lang.MustNumber("-0.5")), "decimal places": lang.Int(0), "thousands separator": lang.Text(""),
	})
	if err != nil || out["formatted number"].AsText() != "-1" {
		t.Errorf("format -0.5 = %v, %v", out["formatted number"], err)
	}
	var ie *books.InputError
	if _, err := call("format_number", map[string]lang.Value{"number": lang.Text("x")}); !errors.As(err, &ie) {
		t.Errorf("format text: err = %v, want InputError", err)
	}

	out, err = call("count_words", map[string]lang.Value{"text": lang.Text("It's a well-known fact - isn't it?")})
	if err != nil || out["word count"].AsNumber().String() != "6" {
		t.Errorf("count = %v, %v", out["word count"], err)
	}

	if _, err := call("nope", nil); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("unknown procedure: err = %v", err)
	}
}

func TestFormatDecimal(t *testing.T) {
	cases := []struct {
		in     string
		places int
		sep    string
		want   string
	}{
		{"0", 2, ",", "0.00"},
		{"999.995", 2, ",", "1,000.00"},
		{"1234", 0, " ", "1 234"},
		{"0.004", 2, ",", "0.00"},
		{"-0.004", 2, ",", "0.00"},
		{"-1234567.891", 1, ".", "-1.234.567.9"},
		{"12.5", 4, ",", "12.5000"},
	}
	for _, c := range cases {
		if got := books.FormatDecimal(c.in, c.places, c.sep); got != c.want {
			t.Errorf("FormatDecimal(%q, %d, %q) = %q, want %q", c.in, c.places, c.sep, got, c.want)
		}
	}
}

func TestClient(t *testing.T) {
	var gotBody map[string]any
	var gotPath, gotKey string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotKey = r.URL.EscapedPath(), r.Header.Get("Idempotency-Key")
		raw, _ := io.ReadAll(r.Body)
		gotBody = nil
		_ = json.Unmarshal(raw, &gotBody)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/book/procedures/send_email:call":
			_, _ = io.WriteString(w, `{"outputs": {"message id": "m-1", "cost": 2.50, "tags": ["a"]}}`)
		case "/book/procedures/fails:call":
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = io.WriteString(w, `{"error": {"message": "mailbox full"}}`)
		case "/book/procedures/slow:call":
			<-r.Context().Done()
		case "/book/procedures/garbage:call":
			_, _ = io.WriteString(w, `not json`)
		default:
			http.Error(w, "no", http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	c := &books.Client{HTTP: srv.Client(), Timeout: 200 * time.Millisecond}
	ctx := context.Background()
	endpoint := srv.URL + "/book/"

	out, err := c.Call(ctx, endpoint, "send_email", "run-1/step-2", map[string]lang.Value{
		"recipient": lang.Text("ana@example.com"), "amount": lang.Num(lang.MustNumber("1.50")),
	})
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/book/procedures/send_email:call" || gotKey != "run-1/step-2" {
		t.Errorf("path %q key %q", gotPath, gotKey)
	}
	in, _ := gotBody["inputs"].(map[string]any)
	if gotBody["call_id"] != "run-1/step-2" || in["recipient"] != "ana@example.com" || in["amount"] != 1.5 {
		t.Errorf("request body = %v", gotBody)
	}
	if out["message id"].AsText() != "m-1" || out["cost"].AsNumber().String() != "2.50" || out["tags"].Kind() != lang.KindList {
		t.Errorf("outputs = %v", out)
	}

	var be *books.BookError
	if _, err := c.Call(ctx, endpoint, "fails", "", nil); !errors.As(err, &be) || be.Message != "mailbox full" {
		t.Errorf("book error: %v", err)
	}
	var ce *books.CallError
	if _, err := c.Call(ctx, endpoint, "slow", "", nil); !errors.As(err, &ce) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v", err)
	}
	if _, err := c.Call(ctx, endpoint, "garbage", "", nil); !errors.As(err, &ce) {
		t.Errorf("garbage: %v", err)
	}
	if _, err := c.Call(ctx, endpoint, "missing", "", nil); !errors.As(err, &ce) {
		t.Errorf("500: %v", err)
	}
	if _, err := c.Call(ctx, "file:///etc", "x", "", nil); !errors.As(err, &ce) {
		t.Errorf("bad endpoint: %v", err)
	}
}

func TestRegistryCallsExternalBook(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Inputs map[string]any `json:"inputs"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		_ = json.NewEncoder(w).Encode(map[string]any{"outputs": map[string]any{"echo": req.Inputs["recipient"]}})
	}))
	defer srv.Close()
	ctx := context.Background()
	r := books.NewRegistry(books.WithClient(&books.Client{HTTP: srv.Client()}))
	if _, err := r.Register(ctx, ws, externalBook(srv.URL), ""); err != nil {
		t.Fatal(err)
	}
	m, err := r.Match(ctx, ws, books.ParseSentence(`send an email to "ana@example.com"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := r.Call(ctx, ws, m.Ref, "c1", map[string]lang.Value{"recipient": lang.Text("ana@example.com")})
	if err != nil || out["echo"].AsText() != "ana@example.com" {
		t.Fatalf("out = %v, err = %v", out, err)
	}
	if _, err := r.Call(ctx, books.Workspace{}, m.Ref, "c1", nil); !errors.Is(err, books.ErrNotFound) {
		t.Errorf("call from another workspace: err = %v", err)
	}
}

func TestFilter(t *testing.T) {
	b := &bookv1.Book{Name: "acme.mail", Version: "1.2.0", Author: "Acme", Tags: []string{"email", "crm"}}
	cases := []struct {
		filter string
		want   bool
		bad    bool
	}{
		{"", true, false},
		{`name = "acme.mail"`, true, false},
		{`name != "acme.mail"`, false, false},
		{`author:"acm"`, true, false},
		{`tags:"email" AND version = "1.2.0"`, true, false},
		{`tags:"sms" OR hidden = true`, false, false},
		{`NOT hidden = true`, true, false},
		{`-tags:"crm"`, false, false},
		{`color = "red"`, false, true},
		{`name = 3`, false, true},
		{`tags = "email"`, false, true},
		{`name = (`, false, true},
	}
	for _, c := range cases {
		f, err := books.ParseFilter(c.filter)
		if c.bad {
			if !errors.Is(err, books.ErrInvalidArgument) {
				t.Errorf("ParseFilter(%q) err = %v, want ErrInvalidArgument", c.filter, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseFilter(%q): %v", c.filter, err)
			continue
		}
		if got := f.Match(b); got != c.want {
			t.Errorf("filter %q matches = %v, want %v", c.filter, got, c.want)
		}
	}
}

// failingStore is a book store whose reads fail.
type failingStore struct{ books.Store }

func (failingStore) ListWorkspaceBooks(context.Context, books.Workspace) ([]*bookv1.Book, error) {
	return nil, errors.New("database is locked")
}

// A store failure is Lookup's error, not a lookup among the built-in books
// alone (which books exist decides what a sentence means).
func TestRunBooksLookupStoreError(t *testing.T) {
	rb := books.NewRegistry(books.WithStore(failingStore{})).ForWorkspace(ws)
	c, err := rb.Lookup(t.Context(), "format the total as text")
	if err == nil || !strings.Contains(err.Error(), "database is locked") || c != nil {
		t.Fatalf("Lookup = %+v, %v; want the store's error", c, err)
	}
}

func TestRunBooks(t *testing.T) {
	ctx := context.Background()
	r := books.NewRegistry()
	rb := r.ForWorkspace(ws)
	c, err := rb.Lookup(ctx, "format the total as text")
	if err != nil || len(c) == 0 || c[0].Book != "standard@1.0.0" || c[0].Name != "format_number" ||
		c[0].Signature != "format a number as text (the formatted number)" {
		t.Fatalf("Lookup = %+v", c)
	}
	if c, err := rb.Lookup(ctx, "paint the fence"); err != nil || len(c) != 0 {
		t.Errorf("Lookup(paint) = %+v, %v", c, err)
	}
	out, err := rb.Call(ctx, c[0], map[string]lang.Value{"number": lang.Int(1234)})
	if err != nil || out["formatted number"].AsText() != "1,234.00" {
		t.Errorf("Call = %v, %v", out, err)
	}
}
