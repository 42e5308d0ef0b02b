package lang

import (
	"fmt"
	"strings"
	"time"
)

func validDate(d Date) bool {
	if d.Year < 1 || d.Year > 9999 || d.Month < 1 || d.Month > 12 || d.Day < 1 {
		return false
	}
	t := time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
	return t.Day() == d.Day
}

func dateOf(t time.Time) Date { return Date{Year: t.Year(), Month: int(t.Month()), Day: t.Day()} }

func (d Date) time() time.Time {
	return time.Date(d.Year, time.Month(d.Month), d.Day, 0, 0, 0, 0, time.UTC)
}

// String writes the date as YYYY-MM-DD.
func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// String writes the time of day as HH:MM:SS, the form of LANGUAGE.md:
// a fraction of a second is kept in the value (comparisons and arithmetic
// use it) but not written.
func (t TimeOfDay) String() string {
	return fmt.Sprintf("%02d:%02d:%02d", t.Hour, t.Minute, t.Second)
}

// parseDate reads YYYY-MM-DD (or the date part of an RFC 3339 datetime).
func parseDate(s string) (Date, bool) {
	s = strings.TrimSpace(s)
	if len(s) > 10 && (s[10] == 'T' || s[10] == 't' || s[10] == ' ') {
		if t, ok := parseDateTime(s); ok {
			return dateOf(t), true
		}
		return Date{}, false
	}
	t, err := time.Parse("2006-01-02", s)
	if err != nil || !validDate(dateOf(t)) {
		return Date{}, false
	}
	return dateOf(t), true
}

// parseDateTime reads RFC 3339, or a datetime without offset (read as UTC).
func parseDateTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Year() < 1 || t.Year() > 9999 {
				return time.Time{}, false
			}
			return t, true
		}
	}
	if len(s) == 10 {
		if t, err := time.Parse("2006-01-02", s); err == nil && validDate(dateOf(t)) {
			return t, true
		}
	}
	return time.Time{}, false
}

func parseTimeOfDay(s string) (TimeOfDay, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"15:04:05.999999999", "15:04", "3:04 PM", "3:04PM", "3 PM", "3PM"} {
		if t, err := time.Parse(layout, strings.ToUpper(s)); err == nil {
			return TimeOfDay{Hour: t.Hour(), Minute: t.Minute(), Second: t.Second(), Nanos: t.Nanosecond()}, true
		}
	}
	return TimeOfDay{}, false
}

func formatDateTime(t time.Time) string { return t.Format(time.RFC3339Nano) }

// formatDuration writes ISO 8601: P1Y2M3DT4H5M6.5S; zero is PT0S; a duration
// whose parts are all negative is written with a leading minus.
func formatDuration(d Duration) string {
	neg := d.Months <= 0 && d.Days <= 0 && d.Nanos <= 0 && (d.Months < 0 || d.Days < 0 || d.Nanos < 0)
	if neg {
		d = Duration{Months: -d.Months, Days: -d.Days, Nanos: -d.Nanos}
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteByte('P')
	if y := d.Months / 12; y != 0 {
		fmt.Fprintf(&b, "%dY", y)
	}
	if m := d.Months % 12; m != 0 {
		fmt.Fprintf(&b, "%dM", m)
	}
	if d.Days != 0 {
		fmt.Fprintf(&b, "%dD", d.Days)
	}
	if d.Nanos != 0 {
		b.WriteByte('T')
		ns := d.Nanos
		sign := ""
		if ns < 0 {
			sign, ns = "-", -ns
		}
		h, m, s, frac := ns/3600e9, ns/60e9%60, ns/1e9%60, ns%1e9
		if h != 0 {
			fmt.Fprintf(&b, "%s%dH", sign, h)
		}
		if m != 0 {
			fmt.Fprintf(&b, "%s%dM", sign, m)
		}
		if s != 0 || frac != 0 {
			fmt.Fprintf(&b, "%s%d", sign, s)
			if frac != 0 {
				b.WriteString(strings.TrimRight(fmt.Sprintf(".%09d", frac), "0"))
			}
			b.WriteByte('S')
		}
	}
	if b.Len() == 1 || (neg && b.Len() == 2) {
		return "PT0S"
	}
	return b.String()
}

// String writes the duration in ISO 8601.
func (d Duration) String() string { return formatDuration(d) }

// parseDuration reads ISO 8601 ("P5D", "PT1H30M", "-P1Y2M") or English
// ("3 days", "2 hours 30 minutes", "1 week and 2 days").
func parseDuration(s string) (Duration, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Duration{}, false
	}
	u := strings.ToUpper(s)
	if strings.HasPrefix(u, "P") || strings.HasPrefix(u, "-P") || strings.HasPrefix(u, "+P") {
		return parseISODuration(u)
	}
	words := strings.Fields(strings.ToLower(strings.ReplaceAll(s, ",", " ")))
	var d Duration
	seen := false
	for i := 0; i < len(words); i++ {
		if words[i] == "and" {
			continue
		}
		if i+1 >= len(words) {
			return Duration{}, false
		}
		n, err := ParseNumber(words[i])
		if err != nil {
			return Duration{}, false
		}
		unit, ok := durationUnit(words[i+1])
		if !ok {
			return Duration{}, false
		}
		part, ok := scaleUnit(n, unit)
		if !ok {
			return Duration{}, false
		}
		d = addDurations(d, part)
		seen = true
		i++
	}
	return d, seen
}

type unitKind int

const (
	unitNanos unitKind = iota
	unitDays
	unitMonths
)

type unit struct {
	kind unitKind
	mult int64
}

func durationUnit(w string) (unit, bool) {
	switch w {
	case "year", "years":
		return unit{unitMonths, 12}, true
	case "month", "months":
		return unit{unitMonths, 1}, true
	case "week", "weeks":
		return unit{unitDays, 7}, true
	case "day", "days":
		return unit{unitDays, 1}, true
	case "hour", "hours":
		return unit{unitNanos, 3600e9}, true
	case "minute", "minutes":
		return unit{unitNanos, 60e9}, true
	case "second", "seconds":
		return unit{unitNanos, 1e9}, true
	case "millisecond", "milliseconds":
		return unit{unitNanos, 1e6}, true
	}
	return unit{}, false
}

// scaleUnit returns n units as a duration; calendar units must be whole.
func scaleUnit(n Number, u unit) (Duration, bool) {
	if u.kind == unitNanos {
		m, err := n.Mul(NumberFromInt(u.mult))
		if err != nil {
			return Duration{}, false
		}
		ns, ok := m.roundEven(0).Int64()
		if !ok {
			return Duration{}, false
		}
		return Duration{Nanos: ns}, true
	}
	i, ok := n.Int64()
	if !ok || i > 1e7 || i < -1e7 {
		return Duration{}, false
	}
	if u.kind == unitDays {
		return Duration{Days: i * u.mult}, true
	}
	return Duration{Months: i * u.mult}, true
}

func addDurations(a, b Duration) Duration {
	return Duration{Months: a.Months + b.Months, Days: a.Days + b.Days, Nanos: a.Nanos + b.Nanos}
}

func parseISODuration(s string) (Duration, bool) {
	neg := false
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		s = s[1:]
	}
	s = s[1:] // P
	if s == "" {
		return Duration{}, false
	}
	var d Duration
	inTime := false
	any := false
	for s != "" {
		if s[0] == 'T' {
			if inTime {
				return Duration{}, false
			}
			inTime = true
			s = s[1:]
			if s == "" {
				return Duration{}, false
			}
			continue
		}
		j := 0
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '-' || s[j] == ',') {
			j++
		}
		if j == 0 || j >= len(s) || j > 30 {
			return Duration{}, false
		}
		n, err := ParseNumber(strings.ReplaceAll(s[:j], ",", "."))
		if err != nil {
			return Duration{}, false
		}
		var u unit
		switch {
		case !inTime && s[j] == 'Y':
			u = unit{unitMonths, 12}
		case !inTime && s[j] == 'M':
			u = unit{unitMonths, 1}
		case !inTime && s[j] == 'W':
			u = unit{unitDays, 7}
		case !inTime && s[j] == 'D':
			u = unit{unitDays, 1}
		case inTime && s[j] == 'H':
			u = unit{unitNanos, 3600e9}
		case inTime && s[j] == 'M':
			u = unit{unitNanos, 60e9}
		case inTime && s[j] == 'S':
			u = unit{unitNanos, 1e9}
		default:
			return Duration{}, false
		}
		part, ok := scaleUnit(n, u)
		if !ok {
			return Duration{}, false
		}
		d = addDurations(d, part)
		any = true
		s = s[j+1:]
	}
	if !any {
		return Duration{}, false
	}
	if neg {
		d = Duration{Months: -d.Months, Days: -d.Days, Nanos: -d.Nanos}
	}
	return d, true
}

// addToDate adds a duration to a date. A duration with a time part gives a
// datetime (at midnight UTC plus the time).
func addToDate(d Date, dur Duration, sign int64) (Value, bool) {
	t := addCalendar(d.time(), sign*dur.Months, sign*dur.Days)
	if dur.Nanos != 0 {
		t = t.Add(time.Duration(sign * dur.Nanos))
		if t.Year() < 1 || t.Year() > 9999 {
			return Value{}, false
		}
		return DateTimeValue(t), true
	}
	if t.Year() < 1 || t.Year() > 9999 {
		return Value{}, false
	}
	return DateValue(dateOf(t)), true
}

func addToDateTime(t time.Time, dur Duration, sign int64) (Value, bool) {
	r := addCalendar(t, sign*dur.Months, sign*dur.Days).Add(time.Duration(sign * dur.Nanos))
	if r.Year() < 1 || r.Year() > 9999 {
		return Value{}, false
	}
	return DateTimeValue(r), true
}

// addCalendar adds months, then days. A day of the month that the month
// reached does not have is its last day: a month after January 31st is the
// last day of February, as a person (and a spreadsheet) counts it.
func addCalendar(t time.Time, months, days int64) time.Time {
	if months > 1<<20 || months < -(1<<20) || days > 1<<30 || days < -(1<<30) {
		return time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) // out of range
	}
	if months != 0 {
		y, m, d := t.Date()
		first := time.Date(y, m+time.Month(months), 1, 0, 0, 0, 0, t.Location())
		if last := first.AddDate(0, 1, -1).Day(); d > last {
			d = last
		}
		hh, mm, ss := t.Clock()
		t = time.Date(first.Year(), first.Month(), d, hh, mm, ss, t.Nanosecond(), t.Location())
	}
	return t.AddDate(0, 0, int(days))
}

func daysBetween(a, b Date) int64 {
	return int64(a.time().Sub(b.time()).Hours() / 24)
}

// durationNanos is a comparable length for durations (months as 30 days).
func durationNanos(d Duration) float64 {
	return float64(d.Months)*30*86400e9 + float64(d.Days)*86400e9 + float64(d.Nanos)
}
