package jobs

import (
	"crypto/rand"
	"sync"
	"time"
)

// crockford is the ULID alphabet (Crockford's base32: no I, L, O, U).
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// idGen makes ULIDs that sort in creation order even within one millisecond: the random part of
// an id made in the same millisecond as the previous one is the previous one's plus one.
type idGen struct {
	mu   sync.Mutex
	ms   uint64
	rand [10]byte // 80 random bits, big-endian
}

var ids idGen

// NewID returns a new job id: a ULID (26 characters, Crockford base32), unique, and ordered by
// creation time within this process (monotonic within a millisecond).
func NewID() string {
	return ids.next(time.Now())
}

func (g *idGen) next(now time.Time) string {
	ms := uint64(now.UnixMilli())
	g.mu.Lock()
	if ms <= g.ms {
		// Same (or an earlier, after a clock step back) millisecond: keep the previous time and
		// increment the random part so ids still sort in creation order.
		ms = g.ms
		for i := len(g.rand) - 1; i >= 0; i-- {
			g.rand[i]++
			if g.rand[i] != 0 {
				break
			}
			if i == 0 { // 2^80 ids in one millisecond: move to the next one
				ms++
			}
		}
	} else {
		_, _ = rand.Read(g.rand[:]) // crypto/rand.Read never fails (Go 1.24+)
	}
	g.ms = ms
	r := g.rand
	g.mu.Unlock()
	return encodeULID(ms, r)
}

// encodeULID writes the 48-bit time and 80 random bits as 26 base32 characters.
func encodeULID(ms uint64, r [10]byte) string {
	var b [26]byte
	// 48-bit time: 10 characters (the first carries 3 bits).
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	// 80 random bits: 16 characters of 5 bits each.
	var hi, lo uint64 // 16 + 64 bits
	hi = uint64(r[0])<<8 | uint64(r[1])
	for _, c := range r[2:] {
		lo = lo<<8 | uint64(c)
	}
	for i := 25; i >= 10; i-- {
		b[i] = crockford[lo&31]
		lo = lo>>5 | (hi&31)<<59
		hi >>= 5
	}
	return string(b[:])
}
