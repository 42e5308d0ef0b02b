package vatbook_test

import (
	"testing"

	"github.com/proserun/prose/bookserver/booktest"
	"github.com/proserun/prose/examples/vatbook"
	"github.com/proserun/prose/internal/books"
	"github.com/proserun/prose/internal/lang"
)

// TestConformance runs the book protocol's conformance checks on the
// example book: version 1 for the rates, version 2 (a connection with a
// secret, a question) for the VAT on an amount.
func TestConformance(t *testing.T) {
	b := vatbook.New("key-Vq3-secret")
	conn := &books.Connection{ID: "c1", Name: "vat service", AuthID: "api key", Credentials: map[string]string{"api key": "key-Vq3-secret"}}
	hundred := lang.Num(lang.MustNumber("100"))
	booktest.Run(t, b.Descriptor(""), b,
		booktest.Case{
			Procedure: "get_the_vat_rate_of_a_country",
			Inputs:    map[string]lang.Value{"country": lang.Text("nl")},
			Want:      map[string]lang.Value{"vat rate": lang.Num(lang.MustNumber("0.21"))},
		},
		booktest.Case{
			Procedure: "get_the_vat_rate_of_a_country",
			Inputs:    map[string]lang.Value{"country": lang.Text("US")},
			WantError: `no VAT rate is known for the country "US"`,
		},
		booktest.Case{
			Procedure: "get_the_vat_on_an_amount", Connection: conn,
			Inputs:       map[string]lang.Value{"amount": hundred},
			WantQuestion: "country",
		},
		booktest.Case{
			Procedure: "get_the_vat_on_an_amount", Connection: conn,
			Inputs:  map[string]lang.Value{"amount": hundred},
			Answers: map[string]lang.Value{"country": lang.Text("DE")},
			Want:    map[string]lang.Value{"vat": lang.Num(lang.MustNumber("19.00"))},
		},
		booktest.Case{
			Procedure: "get_the_vat_on_an_amount", Connection: conn,
			Inputs: map[string]lang.Value{"amount": hundred, "country": lang.Text("LU")},
			Want:   map[string]lang.Value{"vat": lang.Num(lang.MustNumber("17.00"))},
		},
		booktest.Case{
			Procedure:  "get_the_vat_on_an_amount",
			Connection: &books.Connection{Name: "other", AuthID: "api key", Credentials: map[string]string{"api key": "wrong-key"}},
			Inputs:     map[string]lang.Value{"amount": hundred, "country": lang.Text("LU")},
			WantError:  `does not know the api key of the connection "other"`,
		},
		booktest.Case{
			Procedure: "get_the_vat_on_an_amount",
			Inputs:    map[string]lang.Value{"amount": hundred, "country": lang.Text("LU")},
			WantError: "needs a connection to the VAT service",
		},
	)
}
