package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/type/date"
	"google.golang.org/genproto/googleapis/type/timeofday"
	"google.golang.org/protobuf/types/known/timestamppb"

	persistv1 "github.com/proserun/prose/store/persist/v1"
)

func cfgOf(y, m, d, h, mi int, zone string, unit persistv1.FrequencyUnit, interval int32) *persistv1.ScheduleConfig {
	c := &persistv1.ScheduleConfig{Start: &persistv1.ScheduleStart{
		StartDate: &date.Date{Year: int32(y), Month: int32(m), Day: int32(d)},
		Time:      &timeofday.TimeOfDay{Hours: int32(h), Minutes: int32(mi)}, TimeZone: zone,
	}}
	if unit != 0 {
		c.RepeatInterval = &persistv1.RepeatInterval{Unit: unit, Interval: interval}
	}
	return c
}

func mustParse(t *testing.T, c *persistv1.ScheduleConfig) *Calendar {
	t.Helper()
	cal, err := Parse(c)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return cal
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func wantTimes(t *testing.T, got []time.Time, want ...string) {
	t.Helper()
	var g []string
	for _, x := range got {
		g = append(g, x.UTC().Format(time.RFC3339))
	}
	if !slices.Equal(g, want) {
		t.Errorf("occurrences\n got %v\nwant %v", g, want)
	}
}

const (
	day    = persistv1.FrequencyUnit_FREQUENCY_UNIT_DAY
	week   = persistv1.FrequencyUnit_FREQUENCY_UNIT_WEEK
	month  = persistv1.FrequencyUnit_FREQUENCY_UNIT_MONTH
	year   = persistv1.FrequencyUnit_FREQUENCY_UNIT_YEAR
	hour   = persistv1.FrequencyUnit_FREQUENCY_UNIT_HOUR
	minute = persistv1.FrequencyUnit_FREQUENCY_UNIT_MINUTE
)

// Every weekday at 09:00 in Berlin is 08:00 UTC in winter and 07:00 UTC
// after the clocks go forward (2026-03-29).
func TestWeekdaysAcrossSpringForward(t *testing.T) {
	c := cfgOf(2026, 3, 23, 9, 0, "Europe/Berlin", week, 1)
	c.WeeklyPattern = &persistv1.DayOfWeekPattern{Days: []persistv1.DayOfWeek{1, 2, 3, 4, 5}}
	cal := mustParse(t, c)
	wantTimes(t, cal.NextN(utc("2026-03-20T00:00:00Z"), 7),
		"2026-03-23T08:00:00Z", "2026-03-24T08:00:00Z", "2026-03-25T08:00:00Z", "2026-03-26T08:00:00Z", "2026-03-27T08:00:00Z",
		"2026-03-30T07:00:00Z", "2026-03-31T07:00:00Z")
	if s := cal.Summary(); s != "Every weekday at 09:00 (Europe/Berlin)" {
		t.Errorf("summary = %q", s)
	}
	// And back in October (2026-10-25).
	wantTimes(t, cal.NextN(utc("2026-10-22T12:00:00Z"), 3), "2026-10-23T07:00:00Z", "2026-10-26T08:00:00Z", "2026-10-27T08:00:00Z")
}

// A wall-clock time skipped or repeated by a clock change runs once that day.
func TestDailyInTheChangingHour(t *testing.T) {
	cal := mustParse(t, cfgOf(2026, 3, 27, 2, 30, "Europe/Berlin", day, 1))
	wantTimes(t, cal.NextN(time.Time{}, 4),
		"2026-03-27T01:30:00Z", "2026-03-28T01:30:00Z", "2026-03-29T01:30:00Z" /* 03:30 CEST */, "2026-03-30T00:30:00Z")
	cal = mustParse(t, cfgOf(2026, 10, 24, 2, 30, "Europe/Berlin", day, 1))
	got := cal.NextN(time.Time{}, 3)
	wantTimes(t, got[:1], "2026-10-24T00:30:00Z")
	wantTimes(t, got[2:], "2026-10-26T01:30:00Z")
	if l := got[1].In(cal.Location()); l.Day() != 25 || l.Hour() != 2 || l.Minute() != 30 {
		t.Errorf("Oct 25 occurrence = %v", l)
	}
}

// Hour units count elapsed time: 23 runs on the short day, 25 on the long.
func TestHourlyCountsElapsedTime(t *testing.T) {
	for _, tc := range []struct {
		d    int
		m    int
		want int
	}{{29, 3, 23}, {25, 10, 25}, {26, 10, 24}} {
		cal := mustParse(t, cfgOf(2026, 1, 1, 0, 0, "Europe/Berlin", hour, 1))
		loc := cal.Location()
		from := time.Date(2026, time.Month(tc.m), tc.d, 0, 0, 0, 0, loc)
		to := time.Date(2026, time.Month(tc.m), tc.d+1, 0, 0, 0, 0, loc)
		n := 0
		it := cal.Iter(from)
		for {
			o, _, ok := it()
			if !ok || !o.Before(to) {
				break
			}
			n++
		}
		if n != tc.want {
			t.Errorf("2026-%02d-%02d: %d occurrences, want %d", tc.m, tc.d, n, tc.want)
		}
	}
}

func TestMonthlyAndYearlyPatterns(t *testing.T) {
	c := cfgOf(2026, 1, 1, 12, 0, "UTC", month, 1)
	c.MonthlyPattern = &persistv1.DayOfMonthPattern{DayNumber: 31}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 4),
		"2026-01-31T12:00:00Z", "2026-02-28T12:00:00Z", "2026-03-31T12:00:00Z", "2026-04-30T12:00:00Z")

	c = cfgOf(2026, 1, 1, 14, 30, "America/New_York", month, 1)
	c.MonthlyPattern = &persistv1.DayOfMonthPattern{OrdinalDay: &persistv1.OrdinalDayOfWeek{
		Ordinal: persistv1.Ordinal_ORDINAL_LAST, Day: persistv1.DayOfWeek_DAY_OF_WEEK_FRIDAY}}
	cal := mustParse(t, c)
	wantTimes(t, cal.NextN(time.Time{}, 3), "2026-01-30T19:30:00Z", "2026-02-27T19:30:00Z", "2026-03-27T18:30:00Z")
	if s := cal.Summary(); s != "Every month on the last Friday at 14:30 (America/New_York)" {
		t.Errorf("summary = %q", s)
	}

	// The fifth Monday: months without one are skipped.
	c = cfgOf(2026, 1, 1, 9, 0, "UTC", month, 1)
	c.MonthlyPattern = &persistv1.DayOfMonthPattern{OrdinalDay: &persistv1.OrdinalDayOfWeek{
		Ordinal: persistv1.Ordinal_ORDINAL_FIFTH, Day: persistv1.DayOfWeek_DAY_OF_WEEK_MONDAY}}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 2), "2026-03-30T09:00:00Z", "2026-06-29T09:00:00Z")

	// Every 2 months on day 15.
	c = cfgOf(2026, 1, 20, 9, 0, "UTC", month, 2)
	c.MonthlyPattern = &persistv1.DayOfMonthPattern{DayNumber: 15}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 2), "2026-03-15T09:00:00Z", "2026-05-15T09:00:00Z")

	// Yearly on February 29: the last day of February in other years.
	c = cfgOf(2027, 1, 1, 0, 0, "UTC", year, 1)
	c.YearlyPattern = &persistv1.MonthPattern{Month: persistv1.Month_MONTH_FEBRUARY, DayPattern: &persistv1.DayOfMonthPattern{DayNumber: 29}}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 2), "2027-02-28T00:00:00Z", "2028-02-29T00:00:00Z")

	// Every 2 weeks on Monday and Thursday.
	c = cfgOf(2026, 6, 1, 8, 0, "UTC", week, 2)
	c.WeeklyPattern = &persistv1.DayOfWeekPattern{Days: []persistv1.DayOfWeek{4, 1}}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 4), "2026-06-01T08:00:00Z", "2026-06-04T08:00:00Z", "2026-06-15T08:00:00Z", "2026-06-18T08:00:00Z")
}

func TestEndsAndWindow(t *testing.T) {
	c := cfgOf(2026, 5, 1, 9, 0, "UTC", day, 1)
	c.End = &persistv1.ScheduleEnd{EndType: persistv1.ScheduleEndType_SCHEDULE_END_TYPE_AFTER_OCCURRENCES, MaxOccurrences: 3}
	cal := mustParse(t, c)
	wantTimes(t, cal.NextN(time.Time{}, 5), "2026-05-01T09:00:00Z", "2026-05-02T09:00:00Z", "2026-05-03T09:00:00Z")
	for _, tc := range []struct {
		at   string
		want int
	}{{"2026-04-01T00:00:00Z", 3}, {"2026-05-01T09:00:00Z", 3}, {"2026-05-01T09:00:01Z", 2}, {"2026-05-03T10:00:00Z", 0}} {
		if n, ok := cal.Remaining(utc(tc.at)); !ok || n != tc.want {
			t.Errorf("Remaining(%s) = %d, %v; want %d", tc.at, n, ok, tc.want)
		}
	}
	c = cfgOf(2026, 5, 1, 9, 0, "Asia/Tokyo", day, 1)
	c.End = &persistv1.ScheduleEnd{EndType: persistv1.ScheduleEndType_SCHEDULE_END_TYPE_ON_DATE, EndDate: &date.Date{Year: 2026, Month: 5, Day: 2}}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 5), "2026-05-01T00:00:00Z", "2026-05-02T00:00:00Z")
	if _, ok := mustParse(t, c).Remaining(time.Time{}); ok {
		t.Error("Remaining of an end date should not be reported")
	}

	// Every 30 minutes, only between 09:00 and 10:00 New York time.
	c = cfgOf(2026, 7, 1, 0, 0, "America/New_York", minute, 30)
	c.ActiveWindow = &persistv1.TimeWindow{StartTime: timestamppb.New(utc("2026-01-01T14:00:00Z")), EndTime: timestamppb.New(utc("2026-01-01T15:00:00Z")),
		TimeZone: "America/New_York"}
	wantTimes(t, mustParse(t, c).NextN(time.Time{}, 4), "2026-07-01T13:00:00Z", "2026-07-01T13:30:00Z", "2026-07-01T14:00:00Z", "2026-07-02T13:00:00Z")

	// Once.
	cal = mustParse(t, cfgOf(2026, 5, 1, 9, 0, "UTC", 0, 0))
	wantTimes(t, cal.NextN(time.Time{}, 3), "2026-05-01T09:00:00Z")
	if _, ok := cal.Next(utc("2026-05-01T09:00:01Z")); ok {
		t.Error("a one-time schedule has no occurrence after its time")
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		field string
		edit  func(c *persistv1.ScheduleConfig)
	}{
		{"config.start", func(c *persistv1.ScheduleConfig) { c.Start = nil }},
		{"config.start.start_date", func(c *persistv1.ScheduleConfig) { c.Start.StartDate = nil }},
		{"config.start.start_date.day", func(c *persistv1.ScheduleConfig) { c.Start.StartDate.Month, c.Start.StartDate.Day = 2, 30 }},
		{"config.start.start_date.year", func(c *persistv1.ScheduleConfig) { c.Start.StartDate.Year = 0 }},
		{"config.start.time.hours", func(c *persistv1.ScheduleConfig) { c.Start.Time.Hours = 24 }},
		{"config.start.time_zone", func(c *persistv1.ScheduleConfig) { c.Start.TimeZone = "Mars/Olympus" }},
		{"config.start.time_zone", func(c *persistv1.ScheduleConfig) { c.Start.TimeZone = "Local" }},
		{"config.repeat_interval.unit", func(c *persistv1.ScheduleConfig) { c.RepeatInterval.Unit = 0 }},
		{"config.repeat_interval.interval", func(c *persistv1.ScheduleConfig) { c.RepeatInterval.Interval = -1 }},
		{"config.repeat_interval.interval", func(c *persistv1.ScheduleConfig) { c.RepeatInterval.Interval = MaxInterval + 1 }},
		{"config.weekly_pattern", func(c *persistv1.ScheduleConfig) {
			c.WeeklyPattern = &persistv1.DayOfWeekPattern{Days: []persistv1.DayOfWeek{1}}
		}},
		{"config.monthly_pattern", func(c *persistv1.ScheduleConfig) {
			c.RepeatInterval.Unit = month
			c.MonthlyPattern = &persistv1.DayOfMonthPattern{DayNumber: 32}
		}},
		{"config.monthly_pattern.ordinal_day.ordinal", func(c *persistv1.ScheduleConfig) {
			c.RepeatInterval.Unit = month
			c.MonthlyPattern = &persistv1.DayOfMonthPattern{OrdinalDay: &persistv1.OrdinalDayOfWeek{Day: 1}}
		}},
		{"config.weekly_pattern.days", func(c *persistv1.ScheduleConfig) {
			c.RepeatInterval.Unit = week
			c.WeeklyPattern = &persistv1.DayOfWeekPattern{}
		}},
		{"config.weekly_pattern.days[1]", func(c *persistv1.ScheduleConfig) {
			c.RepeatInterval.Unit = week
			c.WeeklyPattern = &persistv1.DayOfWeekPattern{Days: []persistv1.DayOfWeek{1, 0}}
		}},
		{"config.yearly_pattern.day_pattern", func(c *persistv1.ScheduleConfig) {
			c.RepeatInterval.Unit = year
			c.YearlyPattern = &persistv1.MonthPattern{Month: 3}
		}},
		{"config.end.end_date", func(c *persistv1.ScheduleConfig) {
			c.End = &persistv1.ScheduleEnd{EndType: persistv1.ScheduleEndType_SCHEDULE_END_TYPE_ON_DATE}
		}},
		{"config.end.end_date", func(c *persistv1.ScheduleConfig) {
			c.End = &persistv1.ScheduleEnd{EndType: persistv1.ScheduleEndType_SCHEDULE_END_TYPE_ON_DATE, EndDate: &date.Date{Year: 2026, Month: 1, Day: 1}}
		}},
		{"config.end.max_occurrences", func(c *persistv1.ScheduleConfig) {
			c.End = &persistv1.ScheduleEnd{EndType: persistv1.ScheduleEndType_SCHEDULE_END_TYPE_AFTER_OCCURRENCES}
		}},
		{"config.active_window.end_time", func(c *persistv1.ScheduleConfig) {
			c.ActiveWindow = &persistv1.TimeWindow{StartTime: timestamppb.Now()}
		}},
	} {
		c := cfgOf(2026, 5, 1, 9, 0, "UTC", day, 1)
		tc.edit(c)
		_, err := Parse(c)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: error = %v", tc.field, err)
		} else if !strings.Contains(fe.Error(), tc.field) {
			t.Errorf("%s: message %q", tc.field, fe.Error())
		}
	}
}
