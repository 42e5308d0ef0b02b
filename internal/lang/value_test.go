package lang_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/proserun/prose/internal/lang"
)

func TestNumberParts(t *testing.T) {
	for _, tc := range []struct {
		in                 string
		lo, mid, hi, flags uint32
	}{
		{"0", 0, 0, 0, 0},
		{"1", 1, 0, 0, 0},
		{"-1", 1, 0, 0, 0x80000000},
		{"2.50", 250, 0, 0, 2 << 16},
		{"-0.0000000000000000000000000001", 1, 0, 0, 0x80000000 | 28<<16},
		{"79228162514264337593543950335", 0xffffffff, 0xffffffff, 0xffffffff, 0},
		{"-7.9228162514264337593543950335", 0xffffffff, 0xffffffff, 0xffffffff, 0x80000000 | 28<<16},
		{"4294967296", 0, 1, 0, 0},
		{"18446744073709551616", 0, 0, 1, 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			n := lang.MustNumber(tc.in)
			lo, mid, hi, flags := n.Parts()
			if lo != tc.lo || mid != tc.mid || hi != tc.hi || flags != tc.flags {
				t.Fatalf("parts %#x %#x %#x %#x", lo, mid, hi, flags)
			}
			back, err := lang.NumberFromParts(lo, mid, hi, flags)
			if err != nil || back.String() != tc.in {
				t.Fatalf("back %v %v", back, err)
			}
		})
	}
}

func TestNumberFromPartsRejects(t *testing.T) {
	for name, flags := range map[string]uint32{
		"scale 29":  29 << 16,
		"scale 255": 255 << 16,
		"low bits":  1,
		"bit 24":    1 << 24,
		"bit 30":    1 << 30,
	} {
		if _, err := lang.NumberFromParts(1, 0, 0, flags); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// negative zero reads as zero
	n, err := lang.NumberFromParts(0, 0, 0, 0x80000000|2<<16)
	if err != nil || n.String() != "0.00" {
		t.Fatalf("%v %v", n, err)
	}
}

func TestParseNumberRejects(t *testing.T) {
	for _, s := range []string{"", "abc", "1.2.3", "NaN", "Infinity", "79228162514264337593543950336", "0.00000000000000000000000000001", "1e100", strings.Repeat("9", 500)} {
		if _, err := lang.ParseNumber(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestNumberArithmetic(t *testing.T) {
	for _, tc := range []struct{ a, op, b, want string }{
		{"0.1", "+", "0.2", "0.3"},
		{"1.50", "+", "1", "2.50"},
		{"1.25", "*", "4", "5.00"},
		{"149.00", "/", "4", "37.25"},
		{"6", "/", "3", "2"},
		{"1", "/", "3", "0.3333333333333333333333333333"},
		{"-1", "/", "3", "-0.3333333333333333333333333333"},
		{"60", "/", "3", "20"},
		{"600", "/", "0.3", "2000"},
		{"1", "-", "1.00", "0.00"},
		{"-2.5", "*", "-2", "5.0"},
		// a product with more digits than fit loses fractional digits, rounded once, half to even
		{"3.3333333333333333333333333333", "*", "3", "10.000000000000000000000000000"},
		{"1000.00", "*", "0.3333333333333333333333333333", "333.33333333333333333333333330"},
		{"-1000.00", "*", "0.3333333333333333333333333333", "-333.33333333333333333333333330"},
		{"7.9228162514264337593543950335", "*", "1.5", "11.884224377139650639031592550"},
		{"0.0000000000000000000000000001", "*", "0.5", "0.0000000000000000000000000000"},
		{"0.0000000000000000000000000003", "*", "0.5", "0.0000000000000000000000000002"},
	} {
		a, b := lang.MustNumber(tc.a), lang.MustNumber(tc.b)
		var r lang.Number
		var err error
		switch tc.op {
		case "+":
			r, err = a.Add(b)
		case "-":
			r, err = a.Sub(b)
		case "*":
			r, err = a.Mul(b)
		case "/":
			r, err = a.Quo(b)
		}
		if err != nil || r.String() != tc.want {
			t.Errorf("%s %s %s = %v (%v), want %s", tc.a, tc.op, tc.b, r, err, tc.want)
		}
	}
	// a product whose integer part does not fit is an overflow, not a rounding
	if r, err := lang.MustNumber("79228162514264337593543950335").Mul(lang.MustNumber("1.5")); err == nil {
		t.Errorf("max * 1.5 = %v, want an overflow", r)
	}
	if _, err := lang.MustNumber("1").Quo(lang.MustNumber("0.0")); !errors.Is(err, lang.ErrDivisionByZero) {
		t.Errorf("division by zero: %v", err)
	}
}

func TestDecodePlain(t *testing.T) {
	v, err := lang.DecodePlain([]byte(`{"b": 1.50, "a": [true, null, "x"], "b": 2.0}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := lang.AppendPlain(nil, v)
	if string(b) != `{"b":2.0,"a":[true,null,"x"]}` {
		t.Fatal(string(b))
	}
	for _, bad := range []string{``, `{`, `[1,]`, `1 2`, `{"a":1e400}`, `0.00000000000000000000000000001`, strings.Repeat("[", 2000) + strings.Repeat("]", 2000)} {
		if _, err := lang.DecodePlain([]byte(bad)); err == nil {
			t.Errorf("%.40q accepted", bad)
		}
	}
}

func TestPlainForms(t *testing.T) {
	d := lang.NewDictionary()
	d.SetText("z", lang.Int(1))
	d.SetText("a", lang.Int(2))
	tbl := &lang.Table{Columns: []lang.Column{{Name: "n", Values: []lang.Value{lang.Int(1), lang.Int(2)}}}}
	s := lang.NewSet()
	s.Add(lang.Text("x"))
	s.Add(lang.Text("x"))
	for _, tc := range []struct {
		v    lang.Value
		want string
	}{
		{lang.DateValue(lang.Date{Year: 2024, Month: 2, Day: 9}), `"2024-02-09"`},
		{lang.TimeOfDayValue(lang.TimeOfDay{Hour: 7, Minute: 5, Second: 3}), `"07:05:03"`},
		{lang.DurationValue(lang.Duration{Days: 5}), `"P5D"`},
		{lang.DurationValue(lang.Duration{Nanos: 5400e9}), `"PT1H30M"`},
		{lang.DurationValue(lang.Duration{}), `"PT0S"`},
		{lang.TimeZoneValue("Europe/Lisbon"), `"Europe/Lisbon"`},
		{lang.DictValue(d), `{"z":1,"a":2}`},
		{lang.TableValue(tbl), `[{"n":1},{"n":2}]`},
		{lang.SetValue(s), `["x"]`},
		{lang.FileValue(&lang.File{Name: "a.pdf", URL: "https://x/a.pdf"}), `{"file_name":"a.pdf","url":"https://x/a.pdf"}`},
		{lang.Num(lang.MustNumber("-0.00")), `0.00`},
	} {
		b, err := lang.AppendPlain(nil, tc.v)
		if err != nil || string(b) != tc.want {
			t.Errorf("%v: %s (%v), want %s", tc.v.Kind(), b, err, tc.want)
		}
	}
}

func TestRemoteFileName(t *testing.T) {
	for u, want := range map[string]string{
		"https://h/files/download/tok/orders%20may.csv": "orders may.csv",
		"https://h/files/download/tok/a%2Fb.pdf":        "a/b.pdf",
		"https://h/y.pdf?sig=1#x":                       "y.pdf",
		"https://h/dir/":                                "",
		"https://h":                                     "",
		"::not a url":                                   "",
	} {
		if f := lang.RemoteFile(u); f.Name != want || f.URL != u {
			t.Errorf("RemoteFile(%q) = %+v, want the name %q", u, f, want)
		}
	}
}
