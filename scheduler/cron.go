package scheduler

import (
	"strconv"
	"strings"
	"time"
)

// Cron fields, in order, as EventBridge names them.
const (
	fieldMinutes    = "minutes"
	fieldHours      = "hours"
	fieldDayOfMonth = "day-of-month"
	fieldMonth      = "month"
	fieldDayOfWeek  = "day-of-week"
	fieldYear       = "year"
)

// Year bounds EventBridge accepts in the year field.
const (
	minYear = 1970
	maxYear = 2199
)

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	// EventBridge numbers days of the week 1-7 from Sunday.
	dayNames = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

// cronSpec is a parsed cron(...) expression. Sets are indexed by value.
type cronSpec struct {
	minutes []bool // 0-59
	hours   []bool // 0-23
	months  []bool // 1-12
	years   []bool // 0-2199, only 1970-2199 settable
	dom     domSpec
	dow     dowSpec
}

// domSpec is the day-of-month field.
type domSpec struct {
	any            bool   // ?
	days           []bool // 1-31
	last           bool   // L: the last day of the month
	lastWeekday    bool   // LW: the last weekday (Mon-Fri) of the month
	nearestWeekday int    // nW: the weekday nearest day n, within the month; 0 when unused
}

// dowSpec is the day-of-week field (1 = Sunday ... 7 = Saturday).
type dowSpec struct {
	any    bool   // ?
	days   []bool // 1-7
	lastOf int    // nL: the last day n of the month; 0 when unused
	nthDay int    // n#k: day n ...
	nth    int    // ... the k-th of the month
}

// parseCron parses the inside of cron(...).
func parseCron(expr, body string) (*cronSpec, error) {
	fields := strings.Fields(body)
	if len(fields) != 6 {
		return nil, &ExpressionError{Expression: expr, Reason: "cron() wants 6 fields: minutes hours day-of-month month day-of-week year, e.g. cron(0 9 ? * MON-FRI *); got " + strconv.Itoa(len(fields))}
	}
	for i := range fields {
		fields[i] = strings.ToUpper(fields[i])
	}
	p := cronParser{expr: expr}
	c := &cronSpec{
		minutes: p.list(fieldMinutes, fields[0], 0, 59, nil),
		hours:   p.list(fieldHours, fields[1], 0, 23, nil),
		months:  p.list(fieldMonth, fields[3], 1, 12, monthNames),
		years:   p.list(fieldYear, fields[5], minYear, maxYear, nil),
		dom:     p.dayOfMonth(fields[2]),
		dow:     p.dayOfWeek(fields[4]),
	}
	if p.err != nil {
		return nil, p.err
	}
	switch {
	case c.dom.any && c.dow.any:
		return nil, &ExpressionError{Expression: expr, Field: fieldDayOfMonth, Value: "?", Reason: "day-of-month and day-of-week cannot both be ?; use ? in exactly one of them"}
	case !c.dom.any && !c.dow.any:
		return nil, &ExpressionError{Expression: expr, Field: fieldDayOfWeek, Value: fields[4], Reason: "one of day-of-month and day-of-week must be ? (EventBridge does not combine them), e.g. cron(0 9 ? * MON *) or cron(0 9 1 * ? *)"}
	}
	if _, ok := c.next(time.Date(minYear, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Second), time.UTC); !ok {
		return nil, &ExpressionError{Expression: expr, Reason: "it never fires (no date matches every field)"}
	}
	return c, nil
}

// cronParser keeps the first error, so parseCron reads as a list of fields.
type cronParser struct {
	expr string
	err  error
}

func (p *cronParser) fail(field, value, reason string) {
	if p.err == nil {
		p.err = &ExpressionError{Expression: p.expr, Field: field, Value: value, Reason: reason}
	}
}

// value parses a number or (when names is set) a name, and checks its bounds.
func (p *cronParser) value(field, s string, lo, hi int, names []string) (int, bool) {
	for i, n := range names {
		if s == n {
			return i + 1, true
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || s == "" || s[0] == '+' || s[0] == '-' {
		reason := "not a number"
		if names != nil {
			reason = "not a number or a name (" + names[0] + "-" + names[len(names)-1] + ")"
		}
		p.fail(field, s, reason)
		return 0, false
	}
	if n < lo || n > hi {
		p.fail(field, s, "out of range "+strconv.Itoa(lo)+"-"+strconv.Itoa(hi))
		return 0, false
	}
	return n, true
}

// list parses a field made of `*`, values, ranges a-b, increments x/n and comma lists of those.
func (p *cronParser) list(field, s string, lo, hi int, names []string) []bool {
	set := make([]bool, hi+1)
	if p.err != nil {
		return set
	}
	disallowed := "?#LW"
	if names != nil {
		disallowed = "?#" // L and W occur in names (JUL, WED)
	}
	if strings.ContainsAny(s, disallowed) {
		p.fail(field, s, "only the wildcards , - * / are allowed in "+field)
		return set
	}
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			p.fail(field, s, "empty list item")
			return set
		}
		from, to, step := lo, hi, 1
		base := item
		if i := strings.IndexByte(item, '/'); i >= 0 {
			base = item[:i]
			n, err := strconv.Atoi(item[i+1:])
			if err != nil || n < 1 || item[i+1] == '+' {
				p.fail(field, item, "the increment after / must be a positive whole number")
				return set
			}
			step = n
		}
		switch {
		case base == "*":
		case strings.Contains(base, "-"):
			a, b, _ := strings.Cut(base, "-")
			var ok1, ok2 bool
			from, ok1 = p.value(field, a, lo, hi, names)
			to, ok2 = p.value(field, b, lo, hi, names)
			if !ok1 || !ok2 {
				return set
			}
			if from > to {
				p.fail(field, item, "range start is after its end")
				return set
			}
		default:
			v, ok := p.value(field, base, lo, hi, names)
			if !ok {
				return set
			}
			from = v
			if step == 1 && !strings.Contains(item, "/") {
				to = v
			}
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return set
}

func (p *cronParser) dayOfMonth(s string) domSpec {
	switch {
	case s == "?":
		return domSpec{any: true}
	case s == "L":
		return domSpec{last: true}
	case s == "LW":
		return domSpec{lastWeekday: true}
	case strings.HasPrefix(s, "L-"):
		p.fail(fieldDayOfMonth, s, "L-n (days before the last) is not supported by EventBridge; use L or LW")
		return domSpec{}
	case strings.HasSuffix(s, "W") && !strings.ContainsAny(s[:len(s)-1], ",-/*LW"):
		n, ok := p.value(fieldDayOfMonth, s[:len(s)-1], 1, 31, nil)
		if !ok {
			return domSpec{}
		}
		return domSpec{nearestWeekday: n}
	case strings.ContainsAny(s, "LW"):
		p.fail(fieldDayOfMonth, s, "L, LW and nW stand alone: they cannot be combined with lists, ranges or increments")
		return domSpec{}
	case strings.Contains(s, "#"):
		p.fail(fieldDayOfMonth, s, "# is only allowed in day-of-week")
		return domSpec{}
	case strings.Contains(s, "?"):
		p.fail(fieldDayOfMonth, s, "? stands alone")
		return domSpec{}
	}
	return domSpec{days: p.list(fieldDayOfMonth, s, 1, 31, nil)}
}

func (p *cronParser) dayOfWeek(s string) dowSpec {
	switch {
	case s == "?":
		return dowSpec{any: true}
	case s == "L":
		days := make([]bool, 8)
		days[7] = true // the last day of the week: Saturday
		return dowSpec{days: days}
	case strings.HasSuffix(s, "L") && !strings.ContainsAny(s[:len(s)-1], ",-/*#L"):
		n, ok := p.value(fieldDayOfWeek, s[:len(s)-1], 1, 7, dayNames)
		if !ok {
			return dowSpec{}
		}
		return dowSpec{lastOf: n}
	case strings.Contains(s, "#"):
		day, nth, _ := strings.Cut(s, "#")
		if strings.ContainsAny(day, ",-/*L") || strings.ContainsAny(nth, ",-/*L#") {
			p.fail(fieldDayOfWeek, s, "n#k stands alone: EventBridge allows a single # expression, e.g. 2#1 (the first Monday)")
			return dowSpec{}
		}
		d, ok := p.value(fieldDayOfWeek, day, 1, 7, dayNames)
		if !ok {
			return dowSpec{}
		}
		k, err := strconv.Atoi(nth)
		if err != nil || k < 1 || k > 5 || nth[0] == '+' {
			p.fail(fieldDayOfWeek, s, "the occurrence after # must be 1-5")
			return dowSpec{}
		}
		return dowSpec{nthDay: d, nth: k}
	case strings.Contains(s, "L"):
		p.fail(fieldDayOfWeek, s, "L and nL stand alone: they cannot be combined with lists or ranges")
		return dowSpec{}
	case strings.Contains(s, "/"):
		p.fail(fieldDayOfWeek, s, "/ is not allowed in day-of-week (EventBridge allows , - * ? L #)")
		return dowSpec{}
	case strings.Contains(s, "?"):
		p.fail(fieldDayOfWeek, s, "? stands alone")
		return dowSpec{}
	}
	return dowSpec{days: p.list(fieldDayOfWeek, s, 1, 7, dayNames)}
}

// daysIn returns the number of days in month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

func weekday(y int, m time.Month, d int) time.Weekday {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()
}

// dayMatches reports whether date y-m-d matches the day-of-month or day-of-week field (whichever
// is not ?).
func (c *cronSpec) dayMatches(y int, m time.Month, d int) bool {
	last := daysIn(y, m)
	if !c.dom.any {
		switch {
		case c.dom.last:
			return d == last
		case c.dom.lastWeekday:
			lw := last
			switch weekday(y, m, last) {
			case time.Saturday:
				lw--
			case time.Sunday:
				lw -= 2
			}
			return d == lw
		case c.dom.nearestWeekday > 0:
			n := c.dom.nearestWeekday
			if n > last {
				return false // the day does not exist this month
			}
			target := n
			switch weekday(y, m, n) {
			case time.Saturday:
				if n == 1 {
					target = 3 // stay in the month: Monday the 3rd
				} else {
					target = n - 1
				}
			case time.Sunday:
				if n == last {
					target = n - 2 // stay in the month: the Friday before
				} else {
					target = n + 1
				}
			}
			return d == target
		}
		return c.dom.days[d]
	}
	wd := int(weekday(y, m, d)) + 1 // EventBridge numbering: 1 = Sunday
	switch {
	case c.dow.lastOf > 0:
		return wd == c.dow.lastOf && d+7 > last
	case c.dow.nth > 0:
		return wd == c.dow.nthDay && (d-1)/7 == c.dow.nth-1
	}
	return c.dow.days[wd]
}

// next returns the first tick strictly after `after`: the first matching wall-clock minute in loc
// whose earliest instant is after `after`. Minutes that do not exist in loc are skipped.
func (c *cronSpec) next(after time.Time, loc *time.Location) (time.Time, bool) {
	local := after.In(loc)
	naive := time.Date(local.Year(), local.Month(), local.Day(), local.Hour(), local.Minute(), 0, 0, time.UTC).Add(time.Minute)
	nextDay := func(t time.Time) time.Time { return time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC) }
	for naive.Year() <= maxYear {
		y, m, d := naive.Date()
		if y < minYear || !c.years[y] {
			naive = time.Date(max(y+1, minYear), 1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !c.months[m] {
			naive = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !c.dayMatches(y, m, d) {
			naive = nextDay(naive)
			continue
		}
		for h := naive.Hour(); h < 24; h++ {
			if !c.hours[h] {
				continue
			}
			first := 0
			if h == naive.Hour() {
				first = naive.Minute()
			}
			for mi := first; mi < 60; mi++ {
				if !c.minutes[mi] {
					continue
				}
				if t, ok := resolveLocal(civil{y, m, d, h, mi, 0}, loc); ok && t.After(after) {
					return t, true
				}
			}
		}
		naive = nextDay(naive)
	}
	return time.Time{}, false
}
