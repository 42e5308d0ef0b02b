// Package vatbook is an example external book served with bookserver: the
// standard VAT rates of a few EU countries, and the VAT on an amount.
// cmd/vatbook serves it over HTTP.
//
// `get the vat rate of a country` speaks protocol version 1. `get the vat
// on an amount` uses version 2: it needs a connection of the workspace to
// the book with an api key (a secret field), and when the call does not
// give the country it asks the run which country's VAT applies.
package vatbook

import (
	"context"
	"crypto/subtle"
	"fmt"
	"slices"
	"strings"

	"github.com/proserun/prose/bookserver"
	"github.com/proserun/prose/internal/lang"
)

// rates are standard VAT rates by ISO 3166 country code.
var rates = map[string]string{"BE": "0.21", "DE": "0.19", "FR": "0.20", "LU": "0.17", "NL": "0.21"}

// New returns the book "example.vat" 1.1.0. apiKeys are the api keys a
// connection may hold for `get the vat on an amount`; with none, that
// procedure refuses every call.
func New(apiKeys ...string) *bookserver.Book {
	b := bookserver.New("example.vat", "1.1.0").
		Describe("VAT rates", "Standard VAT rates of BE, DE, FR, LU and NL, and the VAT on an amount.").
		Connection(bookserver.ConnectionSpec{
			Authentication: "api key",
			Description:    "The api key of the VAT service",
			Fields:         []bookserver.Field{{Name: "api key", Secret: true, Description: "Given by the VAT service"}},
		})
	country := bookserver.Input{Name: "country", Type: bookserver.Text, Description: "ISO 3166 code, e.g. NL"}
	b.Procedure("get the vat rate of a country (the vat rate)", []bookserver.Input{country},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			r, err := rate(c.Text("country"))
			if err != nil {
				return nil, err
			}
			return bookserver.Outputs{"vat rate": lang.Num(r)}, nil
		})
	optCountry := country
	optCountry.Optional = true
	b.Procedure("get the vat on an amount (the vat)",
		[]bookserver.Input{{Name: "amount", Type: bookserver.Number, Description: "The amount without VAT"}, optCountry},
		func(_ context.Context, c *bookserver.Call) (bookserver.Outputs, error) {
			key := c.Connection.Secret("api key")
			if key == "" {
				return nil, bookserver.Errorf("the VAT on an amount needs a connection to the VAT service with its api key (the connection is \"NAME\")")
			}
			if !slices.ContainsFunc(apiKeys, func(k string) bool { return subtle.ConstantTimeCompare([]byte(k), []byte(key)) == 1 }) {
				return nil, bookserver.Errorf("the VAT service does not know the api key of the connection %q", c.Connection.Name)
			}
			amount, _ := c.Number("amount")
			code := c.Text("country")
			if code == "" {
				a, ok := c.Answer("country")
				if !ok {
					return nil, c.Ask(bookserver.Question{ID: "country",
						Prompt:  fmt.Sprintf("Which country's VAT applies to the amount %s?", amount),
						Choices: countries(), Type: "text"})
				}
				if a.Kind() != lang.KindText {
					return nil, bookserver.Errorf("the country must be a text, not %s", a.Kind())
				}
				code = a.AsText()
			}
			r, err := rate(code)
			if err != nil {
				return nil, err
			}
			vat, err := amount.Mul(r)
			if err != nil {
				return nil, err
			}
			return bookserver.Outputs{"vat": lang.Num(vat)}, nil
		})
	return b
}

func countries() []lang.Value {
	var out []lang.Value
	for _, c := range []string{"BE", "DE", "FR", "LU", "NL"} {
		out = append(out, lang.Text(c))
	}
	return out
}

func rate(country string) (lang.Number, error) {
	r, ok := rates[strings.ToUpper(strings.TrimSpace(country))]
	if !ok {
		return lang.Number{}, bookserver.Errorf("no VAT rate is known for the country %q", country)
	}
	return lang.ParseNumber(r)
}
