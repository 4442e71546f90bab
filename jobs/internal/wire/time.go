package wire

import "time"

// parseTimeUTC parses the RFC 3339 form producers write, "2006-01-02T15:04:05Z" with an optional
// fraction of a second, exactly as time.Time.UnmarshalJSON does. It reports false for any other
// form (an offset, an invalid date, ...): the caller then uses the standard parser. With dc, a
// date seen just before is not worked out again.
func parseTimeUTC(s string, dc *DateCache) (time.Time, bool) {
	if len(s) < len("2006-01-02T15:04:05Z") || s[len(s)-1] != 'Z' ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	var days int64
	if date := s[:10]; dc != nil && dc.date == date {
		days = dc.days
	} else {
		y1, ok1 := twoDigits(s, 0)
		y2, ok2 := twoDigits(s, 2)
		month, ok3 := twoDigits(s, 5)
		day, ok4 := twoDigits(s, 8)
		year := y1*100 + y2
		if !(ok1 && ok2 && ok3 && ok4) || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
			return time.Time{}, false
		}
		days = daysFromCivil(year, month, day)
		if dc != nil {
			dc.date, dc.days = date, days
		}
	}
	hour, ok1 := twoDigits(s, 11)
	minute, ok2 := twoDigits(s, 14)
	sec, ok3 := twoDigits(s, 17)
	if !(ok1 && ok2 && ok3) || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[19 : len(s)-1]; frac != "" {
		// A '.' and at least one digit; digits past the ninth are dropped, as time does.
		if len(frac) < 2 || frac[0] != '.' {
			return time.Time{}, false
		}
		scale := 100000000
		for j := 1; j < len(frac); j++ {
			d := frac[j] - '0'
			if d > 9 {
				return time.Time{}, false
			}
			nsec += int(d) * scale
			scale /= 10
		}
	}
	unix := days*86400 + int64(hour*3600+minute*60+sec)
	return time.Unix(unix, int64(nsec)).UTC(), true
}

// DateCache remembers the last date parseTimeUTC worked out: the envelopes of a batch were
// mostly enqueued on the same day.
type DateCache struct {
	date string // "2006-01-02"
	days int64  // since 1970-01-01
}

// twoDigits reads two decimal digits at s[i:].
func twoDigits(s string, i int) (int, bool) {
	a, b := s[i]-'0', s[i+1]-'0'
	return int(a)*10 + int(b), a <= 9 && b <= 9
}

// daysIn is the number of days in month of year (proleptic Gregorian, as package time counts).
func daysIn(month, year int) int {
	if month == 2 {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 30 + (month+month/8)%2
}

// daysFromCivil returns the days from 1970-01-01 to the given date (proleptic Gregorian).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}
