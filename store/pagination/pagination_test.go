package pagination

import (
	"errors"
	"testing"

	"github.com/proserun/prose/store"
)

func TestPageSize(t *testing.T) {
	for _, tc := range []struct {
		in      int32
		want    int
		wantErr bool
	}{
		{0, 50, false}, {1, 1, false}, {50, 50, false}, {1000, 1000, false},
		{1001, 1000, false}, {1 << 30, 1000, false}, {-1, 0, true},
	} {
		got, err := PageSize(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("PageSize(%d) = %d, %v; want %d, err=%v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("PageSize(%d) error %v is not ErrInvalidArgument", tc.in, err)
		}
	}
}

func TestTokenRoundTrip(t *testing.T) {
	b := Bind("workspaces", "org1", "title:\"x\"", "create_time desc")
	tok := Encode(b, []string{"123", "abc"})
	keys, err := Decode(tok, b, 2)
	if err != nil || len(keys) != 2 || keys[0] != "123" || keys[1] != "abc" {
		t.Fatalf("Decode = %v, %v", keys, err)
	}
	for name, tc := range map[string]struct {
		tok string
		b   Binding
		n   int
	}{
		"other filter":  {tok, Bind("workspaces", "org1", "", "create_time desc"), 2},
		"other parent":  {tok, Bind("workspaces", "org2", "title:\"x\"", "create_time desc"), 2},
		"shifted parts": {tok, Bind("workspaces", "org1title:\"x\"", "", "create_time desc"), 2},
		"key count":     {tok, b, 3},
		"garbage":       {"!!!", b, 2},
		"not json":      {"YWJj", b, 2},
	} {
		if _, err := Decode(tc.tok, tc.b, tc.n); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: Decode err = %v, want ErrInvalidArgument", name, err)
		}
	}
	if keys, err := Decode("", b, 2); err != nil || keys != nil {
		t.Errorf("empty token: %v, %v", keys, err)
	}
}

func FuzzDecode(f *testing.F) {
	b := Bind("x")
	f.Add(Encode(b, []string{"1", "a"}))
	f.Add("")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Decode(s, b, 2)
	})
}
