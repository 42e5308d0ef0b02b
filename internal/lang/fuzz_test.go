package lang_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proserun/prose/internal/lang"
)

// corpusCodes returns the programs of testdata/cases, as fuzz seeds.
func corpusCodes(f *testing.F) []string {
	files, _ := filepath.Glob("testdata/cases/*.json")
	var out []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var c struct{ Code string }
		if err := json.Unmarshal(data, &c); err != nil {
			f.Fatal(err)
		}
		out = append(out, c.Code)
	}
	return out
}

// FuzzParse: any text parses or gives a syntax error with a span inside the
// text; a program that parses runs (briefly) without a panic, and a
// suspended run's state resumes.
func FuzzParse(f *testing.F) {
	for _, c := range corpusCodes(f) {
		f.Add(c)
	}
	f.Add("if (((((\n")
	f.Add("the a's \"b\"'s c is 1\n")
	f.Fuzz(func(t *testing.T, src string) {
		prog, err := lang.Parse(src)
		if err != nil {
			var se *lang.SyntaxError
			ok := errors.As(err, &se)
			if !ok {
				t.Fatalf("not a *SyntaxError: %v", err)
			}
			if se.Span.Start < 0 || se.Span.End > len(src)+1 || se.Span.Start > se.Span.End {
				t.Fatalf("span %v outside the text (%d bytes)", se.Span, len(src))
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		clock := func() time.Time { return time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) }
		res := lang.Start(ctx, prog, nil, lang.Options{Clock: clock})
		for i := 0; i < 3 && res.Status == lang.Suspended; i++ {
			if res.Exception.Group == lang.GroupInternalError {
				t.Fatalf("internal error: %s", res.Exception.Message)
			}
			if res.Exception.Span.Start < 0 || res.Exception.Span.End > len(src) {
				t.Fatalf("exception span %v outside the text", res.Exception.Span)
			}
			next, err := lang.Resume(ctx, prog, res.State, lang.Resolution{Kind: lang.Skip}, lang.Options{Clock: clock})
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			res = next
		}
	})
}

// FuzzDecodePlain: any bytes decode or fail; a decoded value writes and
// reads back to the same plain JSON.
func FuzzDecodePlain(f *testing.F) {
	for _, s := range []string{`{"a":1.50,"b":[true,null,"x"],"a":2}`, `79228162514264337593543950335`, `-0.0000000000000000000000000001`,
		`1e28`, `[[[[]]]]`, `"\u00e9"`, `{"":{}}`, `1.5E+3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := lang.DecodePlain(data)
		if err != nil {
			return
		}
		b, err := lang.AppendPlain(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		w, err := lang.DecodePlain(b)
		if err != nil {
			t.Fatalf("re-decode %s: %v", b, err)
		}
		b2, _ := lang.AppendPlain(nil, w)
		if string(b) != string(b2) {
			t.Fatalf("%s then %s", b, b2)
		}
	})
}

// FuzzNumberParts: the wire form of a number decodes or is rejected; what
// decodes encodes back to the same parts and text.
func FuzzNumberParts(f *testing.F) {
	f.Add(uint32(250), uint32(0), uint32(0), uint32(2<<16))
	f.Add(uint32(0xffffffff), uint32(0xffffffff), uint32(0xffffffff), uint32(0x801c0000))
	f.Add(uint32(1), uint32(2), uint32(3), uint32(29<<16))
	f.Add(uint32(1), uint32(0), uint32(0), uint32(1))
	f.Fuzz(func(t *testing.T, lo, mid, hi, flags uint32) {
		n, err := lang.NumberFromParts(lo, mid, hi, flags)
		if err != nil {
			return
		}
		l2, m2, h2, f2 := n.Parts()
		zero := lo == 0 && mid == 0 && hi == 0
		if l2 != lo || m2 != mid || h2 != hi || (f2 != flags && !(zero && f2 == flags&^0x80000000)) {
			t.Fatalf("parts %x %x %x %x became %x %x %x %x", lo, mid, hi, flags, l2, m2, h2, f2)
		}
		p, err := lang.ParseNumber(n.String())
		if err != nil || p.String() != n.String() {
			t.Fatalf("%s: %v %v", n, p, err)
		}
	})
}

// FuzzNumberMul: a product is the exact product, or it is rounded to the
// most fractional digits that fit (at most 28) and is within half a unit of
// its last digit; it is an overflow only when the integer part does not fit.
func FuzzNumberMul(f *testing.F) {
	f.Add(uint32(0x5555555), uint32(0x1c62ae93), uint32(0x6bb4afe), uint32(28<<16), uint32(3), uint32(0), uint32(0), uint32(0))
	f.Add(uint32(0xffffffff), uint32(0xffffffff), uint32(0xffffffff), uint32(28<<16), uint32(15), uint32(0), uint32(0), uint32(1<<16))
	f.Add(uint32(1), uint32(0), uint32(0), uint32(28<<16), uint32(5), uint32(0), uint32(0), uint32(0x80010000))
	f.Fuzz(func(t *testing.T, lo1, mid1, hi1, fl1, lo2, mid2, hi2, fl2 uint32) {
		a, err1 := lang.NumberFromParts(lo1, mid1, hi1, fl1)
		b, err2 := lang.NumberFromParts(lo2, mid2, hi2, fl2)
		if err1 != nil || err2 != nil {
			return
		}
		rat := func(n lang.Number) *big.Rat {
			r, ok := new(big.Rat).SetString(n.String())
			if !ok {
				t.Fatalf("%s is no rational", n)
			}
			return r
		}
		exact := new(big.Rat).Mul(rat(a), rat(b))
		p, err := a.Mul(b)
		intPart := new(big.Int).Quo(exact.Num(), exact.Denom())
		max := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 96), big.NewInt(1))
		if err != nil {
			if new(big.Int).Abs(intPart).Cmp(max) <= 0 {
				// the integer part fits unless rounding carries it over
				rounded := new(big.Rat).Add(new(big.Rat).Abs(exact), big.NewRat(1, 2))
				if new(big.Int).Quo(rounded.Num(), rounded.Denom()).Cmp(max) <= 0 {
					t.Fatalf("%s * %s: %v, but the integer part fits", a, b, err)
				}
			}
			return
		}
		if p.Scale() > a.Scale()+b.Scale() || p.Scale() > 28 {
			t.Fatalf("%s * %s = %s: scale %d", a, b, p, p.Scale())
		}
		diff := new(big.Rat).Sub(rat(p), exact)
		diff.Abs(diff)
		half := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Mul(big.NewInt(2), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p.Scale())), nil)))
		if diff.Cmp(half) > 0 {
			t.Fatalf("%s * %s = %s, exact %s", a, b, p, exact.FloatString(40))
		}
		if p.Scale() < min(a.Scale()+b.Scale(), 28) {
			// digits were dropped: one more would not have fitted
			scaled := new(big.Rat).Mul(exact, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p.Scale()+1)), nil)))
			q := new(big.Int).Quo(scaled.Num(), scaled.Denom())
			if q.Abs(q).Cmp(max) < 0 {
				t.Fatalf("%s * %s = %s dropped a digit that fits", a, b, p)
			}
		}
	})
}

// FuzzResume: a damaged state is refused, never a panic.
func FuzzResume(f *testing.F) {
	src := "the total is 0\nprocess each item as follows\n  get the x\n  add the x to the total\nthe output is the total\n"
	prog, err := lang.Parse(src)
	if err != nil {
		f.Fatal(err)
	}
	in := map[string]lang.Value{"items": lang.ListValue(lang.Int(1), lang.Int(2))}
	res := lang.Start(context.Background(), prog, in, lang.Options{})
	f.Add(res.State)
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, state []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := lang.Resume(ctx, prog, state, lang.Resolution{Kind: lang.ProvideValues, Values: map[string]lang.Value{"x": lang.Int(1)}}, lang.Options{})
		if err == nil && r == nil {
			t.Fatal("no result")
		}
	})
}
