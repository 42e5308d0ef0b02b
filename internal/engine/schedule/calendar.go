// Package schedule turns a schedule's configuration (prose.persist.v1.ScheduleConfig,
// the engine's own shape of it: the server converts the API's) into its
// occurrences (Calendar) and starts one run per occurrence (Scheduler).
//
// Occurrences of day, week, month and year units are wall-clock times in the
// schedule's IANA time zone: "every day at 09:00 Europe/Berlin" is 09:00 in
// Berlin in summer and in winter. A wall-clock time that does not exist on a
// day (the hour skipped when clocks go forward) runs at the same distance
// after the gap (02:30 becomes 03:30); a time that happens twice (the hour
// repeated when clocks go back) runs once (Go picks the instance after the
// clocks went back). Minute and
// hour units count elapsed time from the first occurrence: "every hour" runs
// 23 times on the day clocks go forward and 25 times on the day they go back.
// The day patterns are RFC 5545 recurrence rules (github.com/teambition/rrule-go).
package schedule

import (
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // IANA zones even where the system has none

	"github.com/teambition/rrule-go"
	"google.golang.org/genproto/googleapis/type/date"

	persistv1 "github.com/proserun/prose/store/persist/v1"
)

// Limits of a configuration (README, "Schedules").
const (
	MaxInterval    = 1000
	MaxOccurrences = 100000
	MinYear        = 1970
	MaxYear        = 9999
	// maxCandidates bounds the candidates one query looks at, so a window that
	// excludes every occurrence ends the search instead of looping.
	maxCandidates = 2_000_000
)

// FieldError is a configuration error of one field (its path in ScheduleConfig).
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func ferr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Calendar is the sequence of occurrences of a valid configuration.
type Calendar struct {
	cfg      *persistv1.ScheduleConfig
	loc      *time.Location
	start    time.Time // the first candidate instant
	unit     persistv1.FrequencyUnit
	interval int
	rule     *rrule.RRule // day units and above
	until    time.Time    // exclusive; zero: none
	count    int          // 0: unbounded
	window   *window
}

type window struct {
	loc      *time.Location
	from, to int // seconds since midnight, inclusive
}

func (w *window) contains(t time.Time) bool {
	l := t.In(w.loc)
	s := l.Hour()*3600 + l.Minute()*60 + l.Second()
	if w.from <= w.to {
		return s >= w.from && s <= w.to
	}
	return s >= w.from || s <= w.to // the window spans midnight
}

func loadZone(field, name string) (*time.Location, error) {
	if name == "" {
		return time.UTC, nil
	}
	if name == "Local" {
		return nil, ferr(field, "%q is not an IANA time zone", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, ferr(field, "unknown IANA time zone %q", name)
	}
	return loc, nil
}

func checkDate(field string, d *date.Date) error {
	if d == nil {
		return ferr(field, "required")
	}
	if d.GetYear() < MinYear || d.GetYear() > MaxYear {
		return ferr(field+".year", "must be from %d to %d", MinYear, MaxYear)
	}
	if d.GetMonth() < 1 || d.GetMonth() > 12 {
		return ferr(field+".month", "must be from 1 to 12")
	}
	last := time.Date(int(d.GetYear()), time.Month(d.GetMonth())+1, 0, 0, 0, 0, 0, time.UTC).Day()
	if d.GetDay() < 1 || int(d.GetDay()) > last {
		return ferr(field+".day", "must be from 1 to %d in %04d-%02d", last, d.GetYear(), d.GetMonth())
	}
	return nil
}

var weekdays = map[persistv1.DayOfWeek]rrule.Weekday{
	persistv1.DayOfWeek_DAY_OF_WEEK_MONDAY: rrule.MO, persistv1.DayOfWeek_DAY_OF_WEEK_TUESDAY: rrule.TU,
	persistv1.DayOfWeek_DAY_OF_WEEK_WEDNESDAY: rrule.WE, persistv1.DayOfWeek_DAY_OF_WEEK_THURSDAY: rrule.TH,
	persistv1.DayOfWeek_DAY_OF_WEEK_FRIDAY: rrule.FR, persistv1.DayOfWeek_DAY_OF_WEEK_SATURDAY: rrule.SA,
	persistv1.DayOfWeek_DAY_OF_WEEK_SUNDAY: rrule.SU,
}

func isoDay(d time.Weekday) persistv1.DayOfWeek {
	if d == time.Sunday {
		return persistv1.DayOfWeek_DAY_OF_WEEK_SUNDAY
	}
	return persistv1.DayOfWeek(d)
}

var ordinals = map[persistv1.Ordinal]int{
	persistv1.Ordinal_ORDINAL_FIRST: 1, persistv1.Ordinal_ORDINAL_SECOND: 2, persistv1.Ordinal_ORDINAL_THIRD: 3,
	persistv1.Ordinal_ORDINAL_FOURTH: 4, persistv1.Ordinal_ORDINAL_FIFTH: 5, persistv1.Ordinal_ORDINAL_LAST: -1,
}

// dayOfMonth sets the rule's day-of-month options from p.
func dayOfMonth(field string, p *persistv1.DayOfMonthPattern, o *rrule.ROption) error {
	n, od := p.GetDayNumber(), p.GetOrdinalDay()
	switch {
	case n != 0 && od != nil:
		return ferr(field, "set day_number or ordinal_day, not both")
	case od != nil:
		nth, ok := ordinals[od.GetOrdinal()]
		if !ok {
			return ferr(field+".ordinal_day.ordinal", "required")
		}
		wd, ok := weekdays[od.GetDay()]
		if !ok {
			return ferr(field+".ordinal_day.day", "required")
		}
		o.Byweekday = []rrule.Weekday{wd.Nth(nth)}
	case n >= 1 && n <= 28:
		o.Bymonthday = []int{int(n)}
	case n > 28 && n <= 31:
		// The day, or the month's last day when it has fewer.
		for d := 28; d <= int(n); d++ {
			o.Bymonthday = append(o.Bymonthday, d)
		}
		o.Bysetpos = []int{-1}
	default:
		return ferr(field, "set day_number (1-31) or ordinal_day")
	}
	return nil
}

// Parse checks cfg and returns its calendar. Errors are *FieldError.
func Parse(cfg *persistv1.ScheduleConfig) (*Calendar, error) {
	if cfg == nil {
		return nil, ferr("config", "required")
	}
	st := cfg.GetStart()
	if st == nil {
		return nil, ferr("config.start", "required")
	}
	if err := checkDate("config.start.start_date", st.GetStartDate()); err != nil {
		return nil, err
	}
	tod := st.GetTime()
	if tod.GetHours() < 0 || tod.GetHours() > 23 {
		return nil, ferr("config.start.time.hours", "must be from 0 to 23")
	}
	if tod.GetMinutes() < 0 || tod.GetMinutes() > 59 {
		return nil, ferr("config.start.time.minutes", "must be from 0 to 59")
	}
	if tod.GetSeconds() < 0 || tod.GetSeconds() > 59 {
		return nil, ferr("config.start.time.seconds", "must be from 0 to 59")
	}
	if tod.GetNanos() != 0 {
		return nil, ferr("config.start.time.nanos", "must be 0 (occurrences are whole seconds)")
	}
	loc, err := loadZone("config.start.time_zone", st.GetTimeZone())
	if err != nil {
		return nil, err
	}
	sd := st.GetStartDate()
	c := &Calendar{cfg: cfg, loc: loc, interval: 1}
	c.start = time.Date(int(sd.GetYear()), time.Month(sd.GetMonth()), int(sd.GetDay()),
		int(tod.GetHours()), int(tod.GetMinutes()), int(tod.GetSeconds()), 0, loc)

	if ri := cfg.GetRepeatInterval(); ri != nil {
		c.unit = ri.GetUnit()
		if _, ok := persistv1.FrequencyUnit_name[int32(c.unit)]; !ok || c.unit == persistv1.FrequencyUnit_FREQUENCY_UNIT_UNSPECIFIED {
			return nil, ferr("config.repeat_interval.unit", "required")
		}
		switch n := ri.GetInterval(); {
		case n == 0:
		case n < 0 || n > MaxInterval:
			return nil, ferr("config.repeat_interval.interval", "must be from 1 to %d", MaxInterval)
		default:
			c.interval = int(n)
		}
	}
	if cfg.GetWeeklyPattern() != nil && c.unit != persistv1.FrequencyUnit_FREQUENCY_UNIT_WEEK {
		return nil, ferr("config.weekly_pattern", "only with repeat_interval.unit FREQUENCY_UNIT_WEEK")
	}
	if cfg.GetMonthlyPattern() != nil && c.unit != persistv1.FrequencyUnit_FREQUENCY_UNIT_MONTH {
		return nil, ferr("config.monthly_pattern", "only with repeat_interval.unit FREQUENCY_UNIT_MONTH")
	}
	if cfg.GetYearlyPattern() != nil && c.unit != persistv1.FrequencyUnit_FREQUENCY_UNIT_YEAR {
		return nil, ferr("config.yearly_pattern", "only with repeat_interval.unit FREQUENCY_UNIT_YEAR")
	}
	if c.unit >= persistv1.FrequencyUnit_FREQUENCY_UNIT_DAY {
		if err := c.parseRule(cfg, int(tod.GetHours()), int(tod.GetMinutes()), int(tod.GetSeconds())); err != nil {
			return nil, err
		}
	}
	if w := cfg.GetActiveWindow(); w != nil {
		if err := c.parseWindow(w); err != nil {
			return nil, err
		}
	}
	if e := cfg.GetEnd(); e != nil {
		if err := c.parseEnd(e); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseRule makes the recurrence rule of a calendar repeating daily or
// less often: its occurrences at the start's time of day, on the days of
// the pattern of its unit (by default the start's day of the week, month
// or year).
func (c *Calendar) parseRule(cfg *persistv1.ScheduleConfig, hour, minute, second int) error {
	loc := c.loc
	o := rrule.ROption{
		Interval: c.interval, Wkst: rrule.MO,
		Dtstart: time.Date(c.start.Year(), c.start.Month(), c.start.Day(), 0, 0, 0, 0, loc),
		Byhour:  []int{hour}, Byminute: []int{minute}, Bysecond: []int{second},
	}
	switch c.unit {
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_DAY:
		o.Freq = rrule.DAILY
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_WEEK:
		o.Freq = rrule.WEEKLY
		days := cfg.GetWeeklyPattern().GetDays()
		if cfg.GetWeeklyPattern() != nil && len(days) == 0 {
			return ferr("config.weekly_pattern.days", "at least one day")
		}
		if len(days) == 0 {
			days = []persistv1.DayOfWeek{isoDay(c.start.Weekday())}
		}
		for i, d := range days {
			wd, ok := weekdays[d]
			if !ok {
				return ferr(fmt.Sprintf("config.weekly_pattern.days[%d]", i), "not a day of the week")
			}
			o.Byweekday = append(o.Byweekday, wd)
		}
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_MONTH:
		o.Freq = rrule.MONTHLY
		p := cfg.GetMonthlyPattern()
		if p == nil {
			p = &persistv1.DayOfMonthPattern{DayNumber: int32(c.start.Day())}
		}
		if err := dayOfMonth("config.monthly_pattern", p, &o); err != nil {
			return err
		}
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_YEAR:
		o.Freq = rrule.YEARLY
		yp := cfg.GetYearlyPattern()
		if yp == nil {
			yp = &persistv1.MonthPattern{Month: persistv1.Month(c.start.Month()), DayPattern: &persistv1.DayOfMonthPattern{DayNumber: int32(c.start.Day())}}
		}
		if yp.GetMonth() < persistv1.Month_MONTH_JANUARY || yp.GetMonth() > persistv1.Month_MONTH_DECEMBER {
			return ferr("config.yearly_pattern.month", "required")
		}
		if yp.GetDayPattern() == nil {
			return ferr("config.yearly_pattern.day_pattern", "required")
		}
		o.Bymonth = []int{int(yp.GetMonth())}
		if err := dayOfMonth("config.yearly_pattern.day_pattern", yp.GetDayPattern(), &o); err != nil {
			return err
		}
	}
	var err error
	if c.rule, err = rrule.NewRRule(o); err != nil {
		return ferr("config", "%v", err)
	}
	return nil
}

// parseWindow sets the hours of the day occurrences may fall in.
func (c *Calendar) parseWindow(w *persistv1.TimeWindow) error {
	var err error
	if w.GetStartTime() == nil {
		return ferr("config.active_window.start_time", "required")
	}
	if w.GetEndTime() == nil {
		return ferr("config.active_window.end_time", "required")
	}
	wloc := c.loc
	if w.GetTimeZone() != "" {
		if wloc, err = loadZone("config.active_window.time_zone", w.GetTimeZone()); err != nil {
			return err
		}
	}
	sec := func(t time.Time) int { t = t.In(wloc); return t.Hour()*3600 + t.Minute()*60 + t.Second() }
	c.window = &window{loc: wloc, from: sec(w.GetStartTime().AsTime()), to: sec(w.GetEndTime().AsTime())}
	return nil
}

// parseEnd sets when the occurrences end: a date (included) or a count.
func (c *Calendar) parseEnd(e *persistv1.ScheduleEnd) error {
	loc := c.loc
	switch e.GetEndType() {
	case persistv1.ScheduleEndType_SCHEDULE_END_TYPE_UNSPECIFIED, persistv1.ScheduleEndType_SCHEDULE_END_TYPE_NEVER:
	case persistv1.ScheduleEndType_SCHEDULE_END_TYPE_ON_DATE:
		if err := checkDate("config.end.end_date", e.GetEndDate()); err != nil {
			return err
		}
		ed := e.GetEndDate()
		c.until = time.Date(int(ed.GetYear()), time.Month(ed.GetMonth()), int(ed.GetDay())+1, 0, 0, 0, 0, loc)
		if !c.until.After(time.Date(c.start.Year(), c.start.Month(), c.start.Day(), 0, 0, 0, 0, loc)) {
			return ferr("config.end.end_date", "is before config.start.start_date")
		}
	case persistv1.ScheduleEndType_SCHEDULE_END_TYPE_AFTER_OCCURRENCES:
		if n := e.GetMaxOccurrences(); n < 1 || n > MaxOccurrences {
			return ferr("config.end.max_occurrences", "must be from 1 to %d", MaxOccurrences)
		}
		c.count = int(e.GetMaxOccurrences())
	default:
		return ferr("config.end.end_type", "unknown end type")
	}
	return nil
}

// Location is the schedule's time zone.
func (c *Calendar) Location() *time.Location { return c.loc }

// raw returns the candidates in order, from the first one at or after from
// (zero: from the start).
func (c *Calendar) raw(from time.Time) func() (time.Time, bool) {
	switch {
	case c.unit == persistv1.FrequencyUnit_FREQUENCY_UNIT_UNSPECIFIED:
		done := false
		return func() (time.Time, bool) {
			if done || (!from.IsZero() && c.start.Before(from)) {
				return time.Time{}, false
			}
			done = true
			return c.start, true
		}
	case c.rule == nil: // minutes or hours: elapsed time
		step := time.Duration(c.interval) * time.Minute
		if c.unit == persistv1.FrequencyUnit_FREQUENCY_UNIT_HOUR {
			step = time.Duration(c.interval) * time.Hour
		}
		k := int64(0)
		if d := from.Sub(c.start); !from.IsZero() && d > 0 {
			k = int64((d + step - 1) / step)
		}
		return func() (time.Time, bool) {
			t := c.start.Add(time.Duration(k) * step)
			k++
			return t, true
		}
	default:
		next := c.rule.Iterator()
		return func() (time.Time, bool) {
			for {
				t, ok := next()
				if !ok || from.IsZero() || !t.Before(from) {
					return t, ok
				}
			}
		}
	}
}

// Iter returns the occurrences at or after from, in order, with their
// position in the series (0 is the first occurrence of the schedule; -1
// when the schedule has no count and the position was not computed).
func (c *Calendar) Iter(from time.Time) func() (time.Time, int, bool) {
	skip := from
	if c.count > 0 {
		skip = time.Time{} // count from the first occurrence
	}
	next := c.raw(skip)
	n, seen := 0, 0
	return func() (time.Time, int, bool) {
		for {
			t, ok := next()
			if !ok || seen >= maxCandidates {
				return time.Time{}, 0, false
			}
			seen++
			if !c.until.IsZero() && !t.Before(c.until) {
				return time.Time{}, 0, false
			}
			if c.window != nil && !c.window.contains(t) {
				continue
			}
			if c.count > 0 && n >= c.count {
				return time.Time{}, 0, false
			}
			i := n
			n++
			if !from.IsZero() && t.Before(from) {
				continue
			}
			if c.count == 0 {
				i = -1
			}
			return t.UTC(), i, true
		}
	}
}

// Next returns the first occurrence at or after t (false: none is left).
func (c *Calendar) Next(t time.Time) (time.Time, bool) {
	o, _, ok := c.Iter(t)()
	return o, ok
}

// NextN returns at most n occurrences at or after t.
func (c *Calendar) NextN(t time.Time, n int) []time.Time {
	var out []time.Time
	it := c.Iter(t)
	for len(out) < n {
		o, _, ok := it()
		if !ok {
			break
		}
		out = append(out, o)
	}
	return out
}

// Remaining returns the occurrences left at or after t when the schedule
// ends after a number of them (ok false otherwise).
func (c *Calendar) Remaining(t time.Time) (int, bool) {
	if c.count == 0 {
		return 0, false
	}
	_, i, ok := c.Iter(t)()
	if !ok {
		return 0, true
	}
	return c.count - i, true
}

// Summary describes the schedule for people, e.g. "Every weekday at 09:00
// (Europe/Berlin)".
func (c *Calendar) Summary() string {
	var b strings.Builder
	at := c.start.Format("15:04")
	if c.start.Second() != 0 {
		at = c.start.Format("15:04:05")
	}
	every := func(unit string) string {
		if c.interval == 1 {
			return "Every " + unit
		}
		return fmt.Sprintf("Every %d %ss", c.interval, unit)
	}
	switch c.unit {
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_UNSPECIFIED:
		fmt.Fprintf(&b, "Once on %s at %s", c.start.Format("2006-01-02"), at)
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_MINUTE:
		fmt.Fprintf(&b, "%s from %s %s", every("minute"), c.start.Format("2006-01-02"), at)
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_HOUR:
		fmt.Fprintf(&b, "%s from %s %s", every("hour"), c.start.Format("2006-01-02"), at)
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_DAY:
		fmt.Fprintf(&b, "%s at %s", every("day"), at)
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_WEEK:
		days := c.cfg.GetWeeklyPattern().GetDays()
		if len(days) == 0 {
			days = []persistv1.DayOfWeek{isoDay(c.start.Weekday())}
		}
		ds := slices.Clone(days)
		slices.Sort(ds)
		ds = slices.Compact(ds)
		if c.interval == 1 && slices.Equal(ds, []persistv1.DayOfWeek{1, 2, 3, 4, 5}) {
			fmt.Fprintf(&b, "Every weekday at %s", at)
			break
		}
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = dayName(d)
		}
		fmt.Fprintf(&b, "%s on %s at %s", every("week"), strings.Join(names, ", "), at)
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_MONTH:
		p := c.cfg.GetMonthlyPattern()
		if p == nil {
			p = &persistv1.DayOfMonthPattern{DayNumber: int32(c.start.Day())}
		}
		fmt.Fprintf(&b, "%s on %s at %s", every("month"), dayPattern(p), at)
	case persistv1.FrequencyUnit_FREQUENCY_UNIT_YEAR:
		yp := c.cfg.GetYearlyPattern()
		if yp == nil {
			yp = &persistv1.MonthPattern{Month: persistv1.Month(c.start.Month()), DayPattern: &persistv1.DayOfMonthPattern{DayNumber: int32(c.start.Day())}}
		}
		fmt.Fprintf(&b, "%s in %s on %s at %s", every("year"), time.Month(yp.GetMonth()), dayPattern(yp.GetDayPattern()), at)
	}
	fmt.Fprintf(&b, " (%s)", c.loc)
	if c.window != nil {
		hm := func(s int) string { return fmt.Sprintf("%02d:%02d", s/3600, s%3600/60) }
		fmt.Fprintf(&b, ", between %s and %s (%s)", hm(c.window.from), hm(c.window.to), c.window.loc)
	}
	if !c.until.IsZero() {
		fmt.Fprintf(&b, ", until %s", c.until.AddDate(0, 0, -1).Format("2006-01-02"))
	}
	if c.count > 0 {
		fmt.Fprintf(&b, ", %d times", c.count)
	}
	return b.String()
}

func dayName(d persistv1.DayOfWeek) string {
	return time.Weekday(int(d) % 7).String()
}

func dayPattern(p *persistv1.DayOfMonthPattern) string {
	if od := p.GetOrdinalDay(); od != nil {
		ord := strings.ToLower(strings.TrimPrefix(od.GetOrdinal().String(), "ORDINAL_"))
		return "the " + ord + " " + dayName(od.GetDay())
	}
	if p.GetDayNumber() > 28 {
		return fmt.Sprintf("day %d (or the month's last day)", p.GetDayNumber())
	}
	return fmt.Sprintf("day %d", p.GetDayNumber())
}
