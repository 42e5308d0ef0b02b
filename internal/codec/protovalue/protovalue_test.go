package protovalue_test

import (
	"strings"
	"testing"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/codec/protovalue"
	"github.com/proserun/prose/internal/lang"
	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/genproto/googleapis/type/datetime"
	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

func plain(t *testing.T, v lang.Value) string {
	t.Helper()
	b, err := lang.AppendPlain(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRoundTrip(t *testing.T) {
	lisbon, err := time.LoadLocation("Europe/Lisbon")
	if err != nil {
		t.Skip("no time zone database")
	}
	d := lang.NewDictionary()
	d.SetText("b", lang.Num(lang.MustNumber("2.50")))
	_ = d.Set(lang.Int(7), lang.Text("seven"))
	_ = d.Set(lang.DateValue(lang.Date{Year: 2024, Month: 1, Day: 2}), lang.Null())
	s := lang.NewSet()
	s.Add(lang.Text("x"))
	s.Add(lang.Num(lang.MustNumber("-0.001")))
	tbl := &lang.Table{Columns: []lang.Column{
		{Name: "n", Values: []lang.Value{lang.Num(lang.MustNumber("1.5")), lang.Null()}},
		{Name: "s", Values: []lang.Value{lang.Text("a"), lang.Bool(true)}},
	}}
	for name, v := range map[string]lang.Value{
		"null":          lang.Null(),
		"bool":          lang.Bool(true),
		"number":        lang.Num(lang.MustNumber("2.50")),
		"number max":    lang.Num(lang.MustNumber("-79228162514264337593543950335")),
		"number tiny":   lang.Num(lang.MustNumber("0.0000000000000000000000000001")),
		"text":          lang.Text("olá"),
		"date":          lang.DateValue(lang.Date{Year: 2024, Month: 2, Day: 29}),
		"time":          lang.TimeOfDayValue(lang.TimeOfDay{Hour: 23, Minute: 59, Second: 59, Nanos: 5}),
		"datetime utc":  lang.DateTimeValue(time.Date(2024, 3, 1, 10, 0, 0, 7, time.UTC)),
		"datetime off":  lang.DateTimeValue(time.Date(2024, 3, 1, 10, 0, 0, 0, time.FixedZone("", -3*3600))),
		"datetime zone": lang.DateTimeValue(time.Date(2024, 7, 1, 10, 0, 0, 0, lisbon)),
		"time zone":     lang.TimeZoneValue("Europe/Lisbon"),
		"duration":      lang.DurationValue(lang.Duration{Days: 3, Nanos: 3600e9 + 5}),
		"duration neg":  lang.DurationValue(lang.Duration{Days: -1, Nanos: -1}),
		"list":          lang.ListValue(lang.Int(1), lang.ListValue(lang.Text("x"))),
		"dictionary":    lang.DictValue(d),
		"set":           lang.SetValue(s),
		"file remote":   lang.FileValue(lang.RemoteFile("https://x/y.pdf")),
		"file inline":   lang.FileValue(&lang.File{Name: "a.txt", Content: []byte("hi")}),
		"table":         lang.TableValue(tbl),
	} {
		t.Run(name, func(t *testing.T) {
			p, err := protovalue.ToProto(v)
			if err != nil {
				t.Fatal(err)
			}
			// through the wire
			b, err := proto.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var q platformv1.Value
			if err := proto.Unmarshal(b, &q); err != nil {
				t.Fatal(err)
			}
			back, err := protovalue.FromProto(&q)
			if err != nil {
				t.Fatal(err)
			}
			if !lang.Equal(v, back) || plain(t, v) != plain(t, back) {
				t.Fatalf("%s came back as %s", plain(t, v), plain(t, back))
			}
		})
	}
}

func TestNumberExact(t *testing.T) {
	p := protovalue.NumberToProto(lang.MustNumber("-1234.5600"))
	if p.Lo != 12345600 || p.Mid != 0 || p.Hi != 0 || p.Flags != 0x80000000|4<<16 {
		t.Fatalf("%v", p)
	}
	n, err := protovalue.NumberFromProto(p)
	if err != nil || n.String() != "-1234.5600" {
		t.Fatalf("%v %v", n, err)
	}
}

func TestRejects(t *testing.T) {
	num := func(lo, mid, hi, flags uint32) *platformv1.Value {
		return &platformv1.Value{Kind: &platformv1.Value_Number{Number: &platformv1.Number{Lo: lo, Mid: mid, Hi: hi, Flags: flags}}}
	}
	for name, tc := range map[string]struct {
		p    *platformv1.Value
		want string
	}{
		"no member":       {&platformv1.Value{}, "no member"},
		"scale 29":        {num(1, 0, 0, 29<<16), "scale 29"},
		"stray flag bits": {num(1, 0, 0, 1), "flags"},
		"partial date":    {&platformv1.Value{Kind: &platformv1.Value_Date{Date: &date.Date{Year: 2024, Month: 0, Day: 0}}}, "without a year, month or day"},
		"bad date":        {&platformv1.Value{Kind: &platformv1.Value_Date{Date: &date.Date{Year: 2023, Month: 2, Day: 29}}}, "not a valid date"},
		"hour 24":         {&platformv1.Value{Kind: &platformv1.Value_Timeofday{Timeofday: &timeofday.TimeOfDay{Hours: 24}}}, "out of range"},
		"unknown zone":    {&platformv1.Value{Kind: &platformv1.Value_TimeZone{TimeZone: &datetime.TimeZone{Id: "Mars/Olympus"}}}, "unknown time zone"},
		"bad duration":    {&platformv1.Value{Kind: &platformv1.Value_Duration{Duration: &durationpb.Duration{Seconds: 1, Nanos: -1}}}, "duration"},
		"bad offset": {&platformv1.Value{Kind: &platformv1.Value_Datetime{Datetime: &datetime.DateTime{Year: 2024, Month: 1, Day: 1,
			TimeOffset: &datetime.DateTime_UtcOffset{UtcOffset: durationpb.New(19 * time.Hour)}}}}, "UTC offset"},
		"uneven table": {&platformv1.Value{Kind: &platformv1.Value_Table{Table: &platformv1.TableValue{Kind: &platformv1.TableValue_Inline{Inline: &platformv1.Table{
			Columns: []*platformv1.Column{{Name: "a", Values: []*platformv1.BdkCellValue{{}}}, {Name: "b"}}}}}}}, "equal length"},
		"remote table": {&platformv1.Value{Kind: &platformv1.Value_Table{Table: &platformv1.TableValue{Kind: &platformv1.TableValue_Remote{Remote: "https://x"}}}}, "remote tables"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := protovalue.FromProto(tc.p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	for name, tc := range map[string]struct {
		v    lang.Value
		want string
	}{
		"months":        {lang.DurationValue(lang.Duration{Months: 1}), "calendar months"},
		"inexact cell":  {lang.TableValue(&lang.Table{Columns: []lang.Column{{Name: "n", Values: []lang.Value{lang.Num(lang.MustNumber("0.1000000000000000000000000001"))}}}}), "exactly"},
		"list key":      {lang.SetValue(lang.NewSet()), ""},
		"invalid value": {lang.Value{}, "cannot be written"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := protovalue.ToProto(tc.v)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestMaps(t *testing.T) {
	in := map[string]lang.Value{"output total": lang.Num(lang.MustNumber("107.00")), "output": lang.Text("x")}
	p, err := protovalue.MapToProto(in)
	if err != nil {
		t.Fatal(err)
	}
	back, err := protovalue.MapFromProto(p)
	if err != nil || len(back) != 2 || back["output total"].AsNumber().String() != "107.00" {
		t.Fatalf("%v %v", back, err)
	}
	if _, err := protovalue.MapToProto(map[string]lang.Value{"d": lang.DurationValue(lang.Duration{Months: 2})}); err == nil || !strings.HasPrefix(err.Error(), "d: ") {
		t.Fatalf("%v", err)
	}
}

// FuzzFromProto: any wire bytes that decode as a Value convert or are
// rejected; what converts comes back equal through ToProto.
func FuzzFromProto(f *testing.F) {
	for _, v := range []lang.Value{
		lang.Num(lang.MustNumber("2.50")), lang.Text("x"), lang.ListValue(lang.Int(1), lang.Null()),
		lang.DateValue(lang.Date{Year: 2024, Month: 1, Day: 31}), lang.DurationValue(lang.Duration{Days: 1, Nanos: 5}),
	} {
		p, err := protovalue.ToProto(v)
		if err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(p)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p platformv1.Value
		if err := proto.Unmarshal(data, &p); err != nil {
			return
		}
		v, err := protovalue.FromProto(&p)
		if err != nil {
			return
		}
		q, err := protovalue.ToProto(v)
		if err != nil {
			// a table cell number read from a double always fits back
			t.Fatalf("converted value does not convert back: %v", err)
		}
		w, err := protovalue.FromProto(q)
		if err != nil {
			t.Fatalf("second conversion: %v", err)
		}
		if !lang.Equal(v, w) {
			t.Fatalf("%v came back as %v", v, w)
		}
	})
}

// TestCellsReadAsBdkValuesWrote: a table cell (BdkCellValue) has the
// numbers of BdkValue, so cells stored or sent as BdkValues before read
// the same, nested lists and dictionaries included.
func TestCellsReadAsBdkValuesWrote(t *testing.T) {
	old := &platformv1.BdkListValue{Values: []*platformv1.BdkValue{
		{Kind: &platformv1.BdkValue_TextValue{TextValue: "Ana"}},
		{Kind: &platformv1.BdkValue_DictionaryValue{DictionaryValue: &platformv1.BdkDictionaryValue{Fields: []*platformv1.BdkDictionaryValueField{
			{Key: "total", Value: &platformv1.BdkValue{Kind: &platformv1.BdkValue_NumberValue{NumberValue: 12.5}}}}}}},
	}}
	raw, err := proto.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var cells platformv1.BdkCellListValue
	if err := proto.Unmarshal(raw, &cells); err != nil {
		t.Fatal(err)
	}
	want := &platformv1.BdkCellListValue{Values: []*platformv1.BdkCellValue{
		{Kind: &platformv1.BdkCellValue_TextValue{TextValue: "Ana"}},
		{Kind: &platformv1.BdkCellValue_DictionaryValue{DictionaryValue: &platformv1.BdkCellDictionaryValue{Fields: []*platformv1.BdkCellDictionaryValueField{
			{Key: "total", Value: &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_NumberValue{NumberValue: 12.5}}}}}}},
	}}
	if !proto.Equal(&cells, want) {
		t.Errorf("cells %v, want %v", &cells, want)
	}
}
