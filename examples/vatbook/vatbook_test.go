package vatbook_test

import (
	"testing"

	"github.com/proserun/prose/bookserver/booktest"
	"github.com/proserun/prose/examples/vatbook"
	"github.com/proserun/prose/lang"
)

// TestConformance runs the book protocol's conformance checks on the
// example book.
func TestConformance(t *testing.T) {
	b := vatbook.New()
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
		})
}
