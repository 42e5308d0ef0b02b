// Package protovalue converts language values to and from the platform's
// protobuf Value message (prose.platform.v1.Value).
//
// Numbers travel exactly as lo/mid/hi/flags; a Number message with a scale
// above 28 or stray flag bits is rejected. What the message cannot hold is an
// error, never a silent change: a duration with calendar months (the message
// uses google.protobuf.Duration), a partial date (year, month or day 0), an
// hour of 24, a time zone the platform does not know. Table cells are
// BdkValues, whose numbers are doubles: a cell number that a double does not
// hold exactly is rejected, and its written scale is not kept.
package protovalue

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/genproto/googleapis/type/datetime"
	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// maxDepth bounds the nesting of lists and dictionaries.
const maxDepth = 512

var errDepth = errors.New("value is nested too deeply")

// NumberToProto returns the wire form of n.
func NumberToProto(n lang.Number) *platformv1.Number {
	lo, mid, hi, flags := n.Parts()
	return &platformv1.Number{Lo: lo, Mid: mid, Hi: hi, Flags: flags}
}

// NumberFromProto reads a Number message; nil is zero.
func NumberFromProto(p *platformv1.Number) (lang.Number, error) {
	return lang.NumberFromParts(p.GetLo(), p.GetMid(), p.GetHi(), p.GetFlags())
}

// MapToProto converts a map of values, such as a run's outputs.
func MapToProto(m map[string]lang.Value) (map[string]*platformv1.Value, error) {
	out := make(map[string]*platformv1.Value, len(m))
	for k, v := range m {
		p, err := ToProto(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = p
	}
	return out, nil
}

// MapFromProto converts a map of Value messages, such as a run's inputs.
func MapFromProto(m map[string]*platformv1.Value) (map[string]lang.Value, error) {
	out := make(map[string]lang.Value, len(m))
	for k, p := range m {
		v, err := FromProto(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = v
	}
	return out, nil
}

// ToProto converts a value to its message.
func ToProto(v lang.Value) (*platformv1.Value, error) { return toProto(v, 0) }

func toProto(v lang.Value, depth int) (*platformv1.Value, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	switch v.Kind() {
	case lang.KindNull:
		return &platformv1.Value{Kind: &platformv1.Value_NullValue{NullValue: structpb.NullValue_NULL_VALUE}}, nil
	case lang.KindBool:
		return &platformv1.Value{Kind: &platformv1.Value_BoolValue{BoolValue: v.AsBool()}}, nil
	case lang.KindNumber:
		return &platformv1.Value{Kind: &platformv1.Value_Number{Number: NumberToProto(v.AsNumber())}}, nil
	case lang.KindText:
		return &platformv1.Value{Kind: &platformv1.Value_Text{Text: v.AsText()}}, nil
	case lang.KindDate:
		return &platformv1.Value{Kind: &platformv1.Value_Date{Date: dateToProto(v.AsDate())}}, nil
	case lang.KindTimeOfDay:
		return &platformv1.Value{Kind: &platformv1.Value_Timeofday{Timeofday: timeToProto(v.AsTimeOfDay())}}, nil
	case lang.KindDateTime:
		return &platformv1.Value{Kind: &platformv1.Value_Datetime{Datetime: dateTimeToProto(v.AsDateTime())}}, nil
	case lang.KindTimeZone:
		return &platformv1.Value{Kind: &platformv1.Value_TimeZone{TimeZone: &datetime.TimeZone{Id: v.AsText()}}}, nil
	case lang.KindDuration:
		d, err := durationToProto(v.AsDuration())
		if err != nil {
			return nil, err
		}
		return &platformv1.Value{Kind: &platformv1.Value_Duration{Duration: d}}, nil
	case lang.KindList:
		items := v.AsList().Items
		l := &platformv1.List{Items: make([]*platformv1.Value, len(items))}
		for i, it := range items {
			p, err := toProto(it, depth+1)
			if err != nil {
				return nil, err
			}
			l.Items[i] = p
		}
		return &platformv1.Value{Kind: &platformv1.Value_List{List: l}}, nil
	case lang.KindDictionary:
		d := v.AsDictionary()
		out := &platformv1.Dictionary{Entries: make([]*platformv1.DictionaryEntry, d.Len())}
		for i := 0; i < d.Len(); i++ {
			k, val := d.Entry(i)
			hk, err := hashableToProto(k)
			if err != nil {
				return nil, err
			}
			pv, err := toProto(val, depth+1)
			if err != nil {
				return nil, err
			}
			out.Entries[i] = &platformv1.DictionaryEntry{Key: hk, Value: pv}
		}
		return &platformv1.Value{Kind: &platformv1.Value_Dictionary{Dictionary: out}}, nil
	case lang.KindSet:
		s := v.AsSet()
		out := &platformv1.Set{Items: make([]*platformv1.HashableValue, s.Len())}
		for i, it := range s.Items() {
			hk, err := hashableToProto(it)
			if err != nil {
				return nil, err
			}
			out.Items[i] = hk
		}
		return &platformv1.Value{Kind: &platformv1.Value_Set{Set: out}}, nil
	case lang.KindFile:
		return &platformv1.Value{Kind: &platformv1.Value_File{File: fileToProto(v.AsFile())}}, nil
	case lang.KindTable:
		t := v.AsTable()
		out := &platformv1.Table{Columns: make([]*platformv1.Column, len(t.Columns))}
		for i, c := range t.Columns {
			col := &platformv1.Column{Name: c.Name, Values: make([]*platformv1.BdkCellValue, len(c.Values))}
			for j, cell := range c.Values {
				b, err := cellToBdk(cell, depth+1)
				if err != nil {
					return nil, fmt.Errorf("table column %q row %d: %w", c.Name, j, err)
				}
				col.Values[j] = b
			}
			out.Columns[i] = col
		}
		return &platformv1.Value{Kind: &platformv1.Value_Table{Table: &platformv1.TableValue{Kind: &platformv1.TableValue_Inline{Inline: out}}}}, nil
	}
	return nil, fmt.Errorf("%s cannot be written as a Value message", v.Kind())
}

func dateToProto(d lang.Date) *date.Date {
	return &date.Date{Year: int32(d.Year), Month: int32(d.Month), Day: int32(d.Day)}
}

func timeToProto(t lang.TimeOfDay) *timeofday.TimeOfDay {
	return &timeofday.TimeOfDay{Hours: int32(t.Hour), Minutes: int32(t.Minute), Seconds: int32(t.Second), Nanos: int32(t.Nanos)}
}

func dateTimeToProto(t time.Time) *datetime.DateTime {
	dt := &datetime.DateTime{Year: int32(t.Year()), Month: int32(t.Month()), Day: int32(t.Day()),
		Hours: int32(t.Hour()), Minutes: int32(t.Minute()), Seconds: int32(t.Second()), Nanos: int32(t.Nanosecond())}
	name := t.Location().String()
	if name != "UTC" && name != "" && name != "Local" {
		if _, err := time.LoadLocation(name); err == nil {
			dt.TimeOffset = &datetime.DateTime_TimeZone{TimeZone: &datetime.TimeZone{Id: name}}
			return dt
		}
	}
	_, off := t.Zone()
	dt.TimeOffset = &datetime.DateTime_UtcOffset{UtcOffset: durationpb.New(time.Duration(off) * time.Second)}
	return dt
}

func durationToProto(d lang.Duration) (*durationpb.Duration, error) {
	if d.Months != 0 {
		return nil, fmt.Errorf("duration %s has calendar months or years, which a protobuf Duration cannot hold", d)
	}
	const maxSeconds = 315_576_000_000
	if d.Days > maxSeconds/86400 || d.Days < -maxSeconds/86400 {
		return nil, fmt.Errorf("duration %s is out of range", d)
	}
	secs := d.Days*86400 + d.Nanos/1e9
	nanos := d.Nanos % 1e9
	// seconds and nanos must have the same sign
	if secs > 0 && nanos < 0 {
		secs--
		nanos += 1e9
	} else if secs < 0 && nanos > 0 {
		secs++
		nanos -= 1e9
	}
	if secs > maxSeconds || secs < -maxSeconds {
		return nil, fmt.Errorf("duration %s is out of range", d)
	}
	return &durationpb.Duration{Seconds: secs, Nanos: int32(nanos)}, nil
}

func fileToProto(f *lang.File) *platformv1.FileValue {
	if f.URL != "" && len(f.Content) == 0 {
		return &platformv1.FileValue{Kind: &platformv1.FileValue_Remote{Remote: f.URL}}
	}
	return &platformv1.FileValue{Kind: &platformv1.FileValue_Inline{Inline: &platformv1.File{FileName: f.Name, Content: f.Content}}}
}

func hashableToProto(v lang.Value) (*platformv1.HashableValue, error) {
	switch v.Kind() {
	case lang.KindBool:
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_BoolValue{BoolValue: v.AsBool()}}, nil
	case lang.KindNumber:
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_Number{Number: NumberToProto(v.AsNumber())}}, nil
	case lang.KindText:
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_Text{Text: v.AsText()}}, nil
	case lang.KindDate:
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_Date{Date: dateToProto(v.AsDate())}}, nil
	case lang.KindTimeOfDay:
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_Timeofday{Timeofday: timeToProto(v.AsTimeOfDay())}}, nil
	case lang.KindDateTime:
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_Datetime{Datetime: dateTimeToProto(v.AsDateTime())}}, nil
	case lang.KindDuration:
		d, err := durationToProto(v.AsDuration())
		if err != nil {
			return nil, err
		}
		return &platformv1.HashableValue{Kind: &platformv1.HashableValue_Duration{Duration: d}}, nil
	}
	return nil, fmt.Errorf("%s cannot be a dictionary key or a set member", v.Kind())
}

// FromProto converts a message to a value. A nil message, or one with no
// member set, is an error.
func FromProto(p *platformv1.Value) (lang.Value, error) { return fromProto(p, 0) }

func fromProto(p *platformv1.Value, depth int) (lang.Value, error) {
	if depth > maxDepth {
		return lang.Value{}, errDepth
	}
	switch k := p.GetKind().(type) {
	case *platformv1.Value_NullValue:
		return lang.Null(), nil
	case *platformv1.Value_BoolValue:
		return lang.Bool(k.BoolValue), nil
	case *platformv1.Value_Number:
		n, err := NumberFromProto(k.Number)
		if err != nil {
			return lang.Value{}, err
		}
		return lang.Num(n), nil
	case *platformv1.Value_Text:
		return lang.Text(k.Text), nil
	case *platformv1.Value_Date:
		return dateFromProto(k.Date)
	case *platformv1.Value_Timeofday:
		return timeFromProto(k.Timeofday)
	case *platformv1.Value_Datetime:
		return dateTimeFromProto(k.Datetime)
	case *platformv1.Value_TimeZone:
		id := k.TimeZone.GetId()
		if _, err := time.LoadLocation(id); err != nil || id == "" || id == "Local" {
			return lang.Value{}, fmt.Errorf("unknown time zone %q", id)
		}
		return lang.TimeZoneValue(id), nil
	case *platformv1.Value_Duration:
		return durationFromProto(k.Duration)
	case *platformv1.Value_List:
		items := make([]lang.Value, len(k.List.GetItems()))
		for i, it := range k.List.GetItems() {
			v, err := fromProto(it, depth+1)
			if err != nil {
				return lang.Value{}, err
			}
			items[i] = v
		}
		return lang.ListValue(items...), nil
	case *platformv1.Value_Dictionary:
		d := lang.NewDictionary()
		for _, e := range k.Dictionary.GetEntries() {
			key, err := hashableFromProto(e.GetKey())
			if err != nil {
				return lang.Value{}, err
			}
			val, err := fromProto(e.GetValue(), depth+1)
			if err != nil {
				return lang.Value{}, err
			}
			if err := d.Set(key, val); err != nil {
				return lang.Value{}, err
			}
		}
		return lang.DictValue(d), nil
	case *platformv1.Value_Set:
		s := lang.NewSet()
		for _, it := range k.Set.GetItems() {
			v, err := hashableFromProto(it)
			if err != nil {
				return lang.Value{}, err
			}
			if _, err := s.Add(v); err != nil {
				return lang.Value{}, err
			}
		}
		return lang.SetValue(s), nil
	case *platformv1.Value_File:
		return fileFromProto(k.File)
	case *platformv1.Value_Table:
		return tableFromProto(k.Table, depth)
	}
	return lang.Value{}, errors.New("the Value message has no member set")
}

func dateFromProto(d *date.Date) (lang.Value, error) {
	if d.GetYear() == 0 || d.GetMonth() == 0 || d.GetDay() == 0 {
		return lang.Value{}, fmt.Errorf("date %04d-%02d-%02d: a date without a year, month or day is not supported", d.GetYear(), d.GetMonth(), d.GetDay())
	}
	ld := lang.Date{Year: int(d.GetYear()), Month: int(d.GetMonth()), Day: int(d.GetDay())}
	t := time.Date(ld.Year, time.Month(ld.Month), ld.Day, 0, 0, 0, 0, time.UTC)
	if ld.Year < 1 || ld.Year > 9999 || ld.Month > 12 || t.Day() != ld.Day || int(t.Month()) != ld.Month {
		return lang.Value{}, fmt.Errorf("date %04d-%02d-%02d is not a valid date", d.GetYear(), d.GetMonth(), d.GetDay())
	}
	return lang.DateValue(ld), nil
}

func validClock(h, m, s, ns int32) bool {
	return h >= 0 && h < 24 && m >= 0 && m < 60 && s >= 0 && s < 60 && ns >= 0 && ns < 1e9
}

func timeFromProto(t *timeofday.TimeOfDay) (lang.Value, error) {
	if !validClock(t.GetHours(), t.GetMinutes(), t.GetSeconds(), t.GetNanos()) {
		return lang.Value{}, fmt.Errorf("time of day %02d:%02d:%02d.%09d is out of range", t.GetHours(), t.GetMinutes(), t.GetSeconds(), t.GetNanos())
	}
	return lang.TimeOfDayValue(lang.TimeOfDay{Hour: int(t.GetHours()), Minute: int(t.GetMinutes()), Second: int(t.GetSeconds()), Nanos: int(t.GetNanos())}), nil
}

func dateTimeFromProto(dt *datetime.DateTime) (lang.Value, error) {
	if _, err := dateFromProto(&date.Date{Year: dt.GetYear(), Month: dt.GetMonth(), Day: dt.GetDay()}); err != nil {
		return lang.Value{}, fmt.Errorf("datetime: %w", err)
	}
	if !validClock(dt.GetHours(), dt.GetMinutes(), dt.GetSeconds(), dt.GetNanos()) {
		return lang.Value{}, errors.New("datetime: the time of day is out of range")
	}
	loc := time.UTC
	switch off := dt.GetTimeOffset().(type) {
	case *datetime.DateTime_UtcOffset:
		d := off.UtcOffset
		if err := d.CheckValid(); err != nil || d.GetNanos() != 0 || d.GetSeconds() > 18*3600 || d.GetSeconds() < -18*3600 {
			return lang.Value{}, errors.New("datetime: the UTC offset must be whole seconds between -18 and +18 hours")
		}
		if d.GetSeconds() != 0 {
			loc = time.FixedZone("", int(d.GetSeconds()))
		}
	case *datetime.DateTime_TimeZone:
		l, err := time.LoadLocation(off.TimeZone.GetId())
		if err != nil || off.TimeZone.GetId() == "" || off.TimeZone.GetId() == "Local" {
			return lang.Value{}, fmt.Errorf("datetime: unknown time zone %q", off.TimeZone.GetId())
		}
		loc = l
	}
	t := time.Date(int(dt.GetYear()), time.Month(dt.GetMonth()), int(dt.GetDay()), int(dt.GetHours()), int(dt.GetMinutes()), int(dt.GetSeconds()), int(dt.GetNanos()), loc)
	return lang.DateTimeValue(t), nil
}

func durationFromProto(d *durationpb.Duration) (lang.Value, error) {
	if err := d.CheckValid(); err != nil {
		return lang.Value{}, fmt.Errorf("duration: %w", err)
	}
	secs := d.GetSeconds()
	days := secs / 86400
	rest := secs % 86400
	return lang.DurationValue(lang.Duration{Days: days, Nanos: rest*1e9 + int64(d.GetNanos())}), nil
}

func fileFromProto(f *platformv1.FileValue) (lang.Value, error) {
	switch k := f.GetKind().(type) {
	case *platformv1.FileValue_Remote:
		return lang.FileValue(lang.RemoteFile(k.Remote)), nil
	case *platformv1.FileValue_Inline:
		return lang.FileValue(&lang.File{Name: k.Inline.GetFileName(), Content: k.Inline.GetContent()}), nil
	}
	return lang.Value{}, errors.New("the file has neither remote nor inline content")
}

func hashableFromProto(h *platformv1.HashableValue) (lang.Value, error) {
	switch k := h.GetKind().(type) {
	case *platformv1.HashableValue_BoolValue:
		return lang.Bool(k.BoolValue), nil
	case *platformv1.HashableValue_Number:
		n, err := NumberFromProto(k.Number)
		if err != nil {
			return lang.Value{}, err
		}
		return lang.Num(n), nil
	case *platformv1.HashableValue_Text:
		return lang.Text(k.Text), nil
	case *platformv1.HashableValue_Date:
		return dateFromProto(k.Date)
	case *platformv1.HashableValue_Timeofday:
		return timeFromProto(k.Timeofday)
	case *platformv1.HashableValue_Datetime:
		return dateTimeFromProto(k.Datetime)
	case *platformv1.HashableValue_Duration:
		return durationFromProto(k.Duration)
	}
	return lang.Value{}, errors.New("the key or set member has no member set")
}

func tableFromProto(tv *platformv1.TableValue, depth int) (lang.Value, error) {
	in := tv.GetInline()
	if in == nil {
		return lang.Value{}, errors.New("remote tables are not supported; only inline tables")
	}
	cols := in.GetColumns()
	for _, c := range cols {
		if len(c.GetValues()) != len(cols[0].GetValues()) {
			return lang.Value{}, fmt.Errorf("table column %q has %d values, column %q has %d: columns must have equal length",
				c.GetName(), len(c.GetValues()), cols[0].GetName(), len(cols[0].GetValues()))
		}
	}
	t := &lang.Table{}
	for _, c := range cols {
		col := lang.Column{Name: c.GetName(), Values: make([]lang.Value, len(c.GetValues()))}
		for j, b := range c.GetValues() {
			v, err := cellFromBdk(b, depth+1)
			if err != nil {
				return lang.Value{}, fmt.Errorf("table column %q row %d: %w", c.GetName(), j, err)
			}
			col.Values[j] = v
		}
		t.Columns = append(t.Columns, col)
	}
	return lang.TableValue(t), nil
}

// cellToBdk writes a table cell. Numbers become doubles: one a double does
// not hold exactly is rejected.
func cellToBdk(v lang.Value, depth int) (*platformv1.BdkCellValue, error) {
	if depth > maxDepth {
		return nil, errDepth
	}
	switch v.Kind() {
	case lang.KindNull:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_NullValue{}}, nil
	case lang.KindText:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_TextValue{TextValue: v.AsText()}}, nil
	case lang.KindBool:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_BooleanValue{BooleanValue: v.AsBool()}}, nil
	case lang.KindNumber:
		n := v.AsNumber()
		f, err := strconv.ParseFloat(n.String(), 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("number %s does not fit in a table cell", n)
		}
		back, err := lang.ParseNumber(strconv.FormatFloat(f, 'f', -1, 64))
		if err != nil || back.Cmp(n) != 0 {
			return nil, fmt.Errorf("number %s cannot be held exactly by a table cell (a double)", n)
		}
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_NumberValue{NumberValue: f}}, nil
	case lang.KindDate:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_DateValue{DateValue: dateToProto(v.AsDate())}}, nil
	case lang.KindTimeOfDay:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_TimeValue{TimeValue: timeToProto(v.AsTimeOfDay())}}, nil
	case lang.KindDateTime:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_DatetimeValue{DatetimeValue: timestamppb.New(v.AsDateTime())}}, nil
	case lang.KindFile:
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_FileValue{FileValue: fileToProto(v.AsFile())}}, nil
	case lang.KindList:
		l := &platformv1.BdkCellListValue{}
		for _, it := range v.AsList().Items {
			b, err := cellToBdk(it, depth+1)
			if err != nil {
				return nil, err
			}
			l.Values = append(l.Values, b)
		}
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_ListValue{ListValue: l}}, nil
	case lang.KindDictionary:
		d := v.AsDictionary()
		out := &platformv1.BdkCellDictionaryValue{}
		for i := 0; i < d.Len(); i++ {
			k, val := d.Entry(i)
			if k.Kind() != lang.KindText {
				return nil, fmt.Errorf("a dictionary in a table cell needs text keys, not %s", k.Kind())
			}
			b, err := cellToBdk(val, depth+1)
			if err != nil {
				return nil, err
			}
			out.Fields = append(out.Fields, &platformv1.BdkCellDictionaryValueField{Key: k.AsText(), Value: b})
		}
		return &platformv1.BdkCellValue{Kind: &platformv1.BdkCellValue_DictionaryValue{DictionaryValue: out}}, nil
	}
	return nil, fmt.Errorf("%s cannot be a table cell", v.Kind())
}

func cellFromBdk(b *platformv1.BdkCellValue, depth int) (lang.Value, error) {
	if depth > maxDepth {
		return lang.Value{}, errDepth
	}
	switch k := b.GetKind().(type) {
	case *platformv1.BdkCellValue_NullValue:
		return lang.Null(), nil
	case *platformv1.BdkCellValue_TextValue:
		return lang.Text(k.TextValue), nil
	case *platformv1.BdkCellValue_BooleanValue:
		return lang.Bool(k.BooleanValue), nil
	case *platformv1.BdkCellValue_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return lang.Value{}, fmt.Errorf("number %v is not a decimal", k.NumberValue)
		}
		n, err := lang.ParseNumber(strconv.FormatFloat(k.NumberValue, 'f', -1, 64))
		if err != nil {
			return lang.Value{}, err
		}
		return lang.Num(n), nil
	case *platformv1.BdkCellValue_DateValue:
		return dateFromProto(k.DateValue)
	case *platformv1.BdkCellValue_TimeValue:
		return timeFromProto(k.TimeValue)
	case *platformv1.BdkCellValue_DatetimeValue:
		if err := k.DatetimeValue.CheckValid(); err != nil {
			return lang.Value{}, err
		}
		return lang.DateTimeValue(k.DatetimeValue.AsTime()), nil
	case *platformv1.BdkCellValue_FileValue:
		return fileFromProto(k.FileValue)
	case *platformv1.BdkCellValue_ListValue:
		var items []lang.Value
		for _, it := range k.ListValue.GetValues() {
			v, err := cellFromBdk(it, depth+1)
			if err != nil {
				return lang.Value{}, err
			}
			items = append(items, v)
		}
		return lang.ListValue(items...), nil
	case *platformv1.BdkCellValue_DictionaryValue:
		d := lang.NewDictionary()
		for _, f := range k.DictionaryValue.GetFields() {
			v, err := cellFromBdk(f.GetValue(), depth+1)
			if err != nil {
				return lang.Value{}, err
			}
			d.SetText(f.GetKey(), v)
		}
		return lang.DictValue(d), nil
	}
	return lang.Value{}, fmt.Errorf("table cell of type %T is not supported", b.GetKind())
}
