// Package vatbook is an example external book served with bookserver: the
// standard VAT rates of a few EU countries, and the VAT on an amount.
// cmd/vatbook serves it over HTTP.
package vatbook

import (
	"context"
	"strings"

	"github.com/proserun/prose/bookserver"
	"github.com/proserun/prose/lang"
)

// rates are standard VAT rates by ISO 3166 country code.
var rates = map[string]string{"BE": "0.21", "DE": "0.19", "FR": "0.20", "LU": "0.17", "NL": "0.21"}

// New returns the book "example.vat" 1.0.0.
func New() *bookserver.Book {
	b := bookserver.New("example.vat", "1.0.0").
		Describe("VAT rates", "Standard VAT rates of BE, DE, FR, LU and NL.")
	country := bookserver.Input{Name: "country", Type: bookserver.Text, Description: "ISO 3166 code, e.g. NL"}
	b.Procedure("get the vat rate of a country (the vat rate)", []bookserver.Input{country},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			r, err := rate(c.Text("country"))
			if err != nil {
				return nil, err
			}
			return bookserver.Outputs{"vat rate": lang.Num(r)}, nil
		})
	return b
}

func rate(country string) (lang.Number, error) {
	r, ok := rates[strings.ToUpper(strings.TrimSpace(country))]
	if !ok {
		return lang.Number{}, bookserver.Errorf("no VAT rate is known for the country %q", country)
	}
	return lang.ParseNumber(r)
}
