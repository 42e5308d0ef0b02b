package lang

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// AppendPlain appends the plain-JSON form of v to b: text → string, number →
// JSON number written exactly with its scale, boolean, null, list and set →
// array, dictionary → object, date → "YYYY-MM-DD", datetime → RFC 3339, time
// of day → "HH:MM:SS", time zone → its name, duration → ISO 8601, table →
// array of row objects, file → {"file_name", "url"}.
func AppendPlain(b []byte, v Value) ([]byte, error) { return appendPlain(b, v, 0) }

// MarshalJSON writes the plain-JSON form.
func (v Value) MarshalJSON() ([]byte, error) { return AppendPlain(nil, v) }

// UnmarshalJSON reads the plain-JSON form (see DecodePlain).
func (v *Value) UnmarshalJSON(b []byte) error {
	x, err := DecodePlain(b)
	if err != nil {
		return err
	}
	*v = x
	return nil
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

func appendPlain(b []byte, v Value, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errors.New("value is nested too deeply")
	}
	switch v.k {
	case kindUnset, KindNull:
		return append(b, "null"...), nil
	case KindBool:
		return strconv.AppendBool(b, v.i != 0), nil
	case KindNumber:
		n := v.num()
		return n.appendTo(b), nil
	case KindText, KindTimeZone:
		return appendString(b, v.s), nil
	case KindDate:
		return appendString(b, v.AsDate().String()), nil
	case KindTimeOfDay:
		return appendString(b, v.AsTimeOfDay().String()), nil
	case KindDateTime:
		return appendString(b, formatDateTime(v.AsDateTime())), nil
	case KindDuration:
		return appendString(b, formatDuration(v.AsDuration())), nil
	case KindList:
		return appendArray(b, v.AsList().Items, depth)
	case KindSet:
		return appendArray(b, v.AsSet().items, depth)
	case KindDictionary:
		d := v.AsDictionary()
		b = append(b, '{')
		for i := range d.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, valueText(d.keys[i]))
			b = append(b, ':')
			var err error
			if b, err = appendPlain(b, d.vals[i], depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case KindTable:
		t := v.AsTable()
		b = append(b, '[')
		for r := 0; r < t.NumRows(); r++ {
			if r > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendPlain(b, DictValue(t.Row(r)), depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case KindFile:
		f := v.AsFile()
		b = append(b, `{"file_name":`...)
		b = appendString(b, f.Name)
		b = append(b, `,"url":`...)
		b = appendString(b, f.URL)
		if len(f.Content) > 0 {
			b = append(b, `,"content":`...)
			b = appendString(b, base64.StdEncoding.EncodeToString(f.Content))
		}
		return append(b, '}'), nil
	}
	return b, fmt.Errorf("cannot write %s as JSON", v.k)
}

func appendArray(b []byte, items []Value, depth int) ([]byte, error) {
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendPlain(b, it, depth+1); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// EncodePlainMap writes an object of plain values with sorted keys.
func EncodePlainMap(m map[string]Value) ([]byte, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = AppendPlain(b, m[k]); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// DecodePlain reads one value in plain-JSON form: objects become
// dictionaries (key order kept; a duplicate key overwrites), arrays lists,
// strings text, and numbers exact decimals (a number with more than 28
// fractional digits or beyond 96 bits is an error, never rounded).
func DecodePlain(data []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodePlain(dec, 0)
	if err != nil {
		return Value{}, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return Value{}, errors.New("invalid JSON: more than one value")
	}
	return v, nil
}

// DecodePlainObject reads a JSON object of plain values, such as run inputs.
func DecodePlainObject(data []byte) (map[string]Value, error) {
	v, err := DecodePlain(data)
	if err != nil {
		return nil, err
	}
	if v.k != KindDictionary {
		return nil, fmt.Errorf("expected a JSON object, got %s", v.k.article())
	}
	d := v.AsDictionary()
	m := make(map[string]Value, d.Len())
	for i := range d.keys {
		m[d.keys[i].s] = d.vals[i]
	}
	return m, nil
}

func decodePlain(dec *json.Decoder, depth int) (Value, error) {
	if depth > maxDepth {
		return Value{}, errors.New("JSON is nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return Value{}, errors.New("invalid JSON: unexpected end")
		}
		return Value{}, fmt.Errorf("invalid JSON: %w", err)
	}
	switch t := tok.(type) {
	case nil:
		return Null(), nil
	case bool:
		return Bool(t), nil
	case string:
		return Text(t), nil
	case json.Number:
		n, err := ParseNumber(string(t))
		if err != nil {
			return Value{}, err
		}
		return Num(n), nil
	case json.Delim:
		switch t {
		case '[':
			items := []Value{}
			for dec.More() {
				it, err := decodePlain(dec, depth+1)
				if err != nil {
					return Value{}, err
				}
				items = append(items, it)
			}
			if _, err := dec.Token(); err != nil {
				return Value{}, fmt.Errorf("invalid JSON: %w", err)
			}
			return ListValue(items...), nil
		case '{':
			d := NewDictionary()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return Value{}, fmt.Errorf("invalid JSON: %w", err)
				}
				k, ok := kt.(string)
				if !ok {
					return Value{}, errors.New("invalid JSON: object key is not a string")
				}
				val, err := decodePlain(dec, depth+1)
				if err != nil {
					return Value{}, err
				}
				d.SetText(k, val)
			}
			if _, err := dec.Token(); err != nil {
				return Value{}, fmt.Errorf("invalid JSON: %w", err)
			}
			return DictValue(d), nil
		}
	}
	return Value{}, fmt.Errorf("invalid JSON: unexpected %v", tok)
}
