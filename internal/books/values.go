package books

import (
	"fmt"
	"strconv"

	platformv1 "github.com/proserun/prose/gen/prose/platform/v1"
	"github.com/proserun/prose/internal/lang"
)

// FromBdkValue converts a book-protocol value (a concept's default value) to
// a language value. Conceptual values become their words as text; sensitive
// values are unwrapped; offloadable values must be inline; opaque values and
// remote tables are not supported.
func FromBdkValue(v *platformv1.BdkValue) (lang.Value, error) {
	switch k := v.GetKind().(type) {
	case *platformv1.BdkValue_NullValue:
		return lang.Null(), nil
	case *platformv1.BdkValue_ConceptualValue:
		return lang.Text(PhraseText(k.ConceptualValue)), nil
	case *platformv1.BdkValue_TextValue:
		return lang.Text(k.TextValue), nil
	case *platformv1.BdkValue_NumberValue:
		n, err := lang.ParseNumber(strconv.FormatFloat(k.NumberValue, 'f', -1, 64))
		if err != nil {
			return lang.Value{}, err
		}
		return lang.Num(n), nil
	case *platformv1.BdkValue_BooleanValue:
		return lang.Bool(k.BooleanValue), nil
	case *platformv1.BdkValue_DatetimeValue:
		return lang.DateTimeValue(k.DatetimeValue.AsTime()), nil
	case *platformv1.BdkValue_DateValue:
		d := k.DateValue
		return lang.DateValue(lang.Date{Year: int(d.GetYear()), Month: int(d.GetMonth()), Day: int(d.GetDay())}), nil
	case *platformv1.BdkValue_TimeValue:
		t := k.TimeValue
		return lang.TimeOfDayValue(lang.TimeOfDay{Hour: int(t.GetHours()), Minute: int(t.GetMinutes()), Second: int(t.GetSeconds()), Nanos: int(t.GetNanos())}), nil
	case *platformv1.BdkValue_FileValue:
		f := k.FileValue
		if in := f.GetInline(); in != nil {
			return lang.FileValue(&lang.File{Name: in.GetFileName(), Content: in.GetContent()}), nil
		}
		return lang.FileValue(lang.RemoteFile(f.GetRemote())), nil
	case *platformv1.BdkValue_DictionaryValue:
		return fromBdkDict(k.DictionaryValue)
	case *platformv1.BdkValue_ListValue:
		return fromBdkList(k.ListValue)
	case *platformv1.BdkValue_SensitiveValue:
		return FromBdkValue(k.SensitiveValue.GetValue())
	case *platformv1.BdkValue_OffloadableTextValue:
		if k.OffloadableTextValue.GetRemote() != "" {
			return lang.Value{}, fmt.Errorf("%w: remote text values are not supported", ErrInvalidArgument)
		}
		return lang.Text(k.OffloadableTextValue.GetInline()), nil
	case *platformv1.BdkValue_OffloadableDictionaryValue:
		if k.OffloadableDictionaryValue.GetRemote() != "" {
			return lang.Value{}, fmt.Errorf("%w: remote dictionary values are not supported", ErrInvalidArgument)
		}
		return fromBdkDict(k.OffloadableDictionaryValue.GetInline())
	case *platformv1.BdkValue_OffloadableListValue:
		if k.OffloadableListValue.GetRemote() != "" {
			return lang.Value{}, fmt.Errorf("%w: remote list values are not supported", ErrInvalidArgument)
		}
		return fromBdkList(k.OffloadableListValue.GetInline())
	case nil:
		return lang.Null(), nil
	default:
		return lang.Value{}, fmt.Errorf("%w: book value %T is not supported", ErrInvalidArgument, k)
	}
}

func fromBdkDict(d *platformv1.BdkDictionaryValue) (lang.Value, error) {
	out := lang.NewDictionary()
	for _, f := range d.GetFields() {
		v, err := FromBdkValue(f.GetValue())
		if err != nil {
			return lang.Value{}, err
		}
		out.SetText(f.GetKey(), v)
	}
	return lang.DictValue(out), nil
}

func fromBdkList(l *platformv1.BdkListValue) (lang.Value, error) {
	items := make([]lang.Value, 0, len(l.GetValues()))
	for _, x := range l.GetValues() {
		v, err := FromBdkValue(x)
		if err != nil {
			return lang.Value{}, err
		}
		items = append(items, v)
	}
	return lang.ListValue(items...), nil
}
