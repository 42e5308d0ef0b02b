package aipfilter

import (
	"errors"
	"strings"
	"testing"

	"go.einride.tech/aip/filtering"
)

func TestParseBounds(t *testing.T) {
	decls, err := filtering.NewDeclarations(filtering.DeclareStandardFunctions(), filtering.DeclareIdent("name", filtering.TypeString))
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("(", MaxDepth) + `name = "a"` + strings.Repeat(")", MaxDepth)
	for _, c := range []struct {
		filter   string
		complex  bool // ErrTooComplex
		parseErr bool
	}{
		{`name = "a"`, false, false},
		{deep, false, false},
		{"(" + deep + ")", true, true},
		{strings.Repeat("(", 4000), true, true},
		{strings.Repeat("(", MaxDepth+1), true, true},
		{`name = "` + strings.Repeat("(", 100) + `"`, false, false}, // inside a string
		{`name = "\"` + strings.Repeat("(", 100) + `"`, false, false},
		{`name = 'it''s` + strings.Repeat("(", 10) + `'`, false, true},
		{strings.Repeat("a", MaxLength+1), true, true},
		{`name = `, false, true},
		{strings.Repeat("(", MaxDepth), false, true},
	} {
		_, err := Parse(c.filter, decls)
		if (err != nil) != c.parseErr || errors.Is(err, ErrTooComplex) != c.complex {
			t.Errorf("%.60q: %v, want error %v (too complex %v)", c.filter, err, c.parseErr, c.complex)
		}
		if err != nil && len(err.Error()) > maxMessage+10 {
			t.Errorf("%.60q: an error of %d bytes", c.filter, len(err.Error()))
		}
	}
}

func FuzzParse(f *testing.F) {
	decls, err := filtering.NewDeclarations(filtering.DeclareStandardFunctions(), filtering.DeclareIdent("name", filtering.TypeString))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`name = "a"`, `((name:"x"))`, `NOT name = 'b'`, strings.Repeat("(", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := Parse(s, decls)
		if err != nil && len(err.Error()) > maxMessage+200 {
			t.Errorf("an error of %d bytes", len(err.Error()))
		}
	})
}
