package main

import "fmt"

// Every ratio the bench prints is measured in alternating pairs: both sides run once per pair,
// in the same run and under the same load, the side that goes first alternating from pair to
// pair, and the ratio is the median of the pairs' own ratios, printed with their spread
// (`<key>_spread=lowest–highest`). On a shared machine a single run moves by ±30 %; a pair's two
// sides move together.

// minPairs is the fewest pairs a ratio is the median of.
const minPairs = 5

// alternate runs n pairs of a and b (a first in even pairs, b first in odd ones) and returns
// each side's figures in pair order.
func alternate(n int, a, b func(pair int) (float64, error)) (as, bs []float64, err error) {
	for pair := range n {
		for k := range 2 {
			if (pair+k)%2 == 0 {
				v, err := a(pair)
				if err != nil {
					return nil, nil, err
				}
				as = append(as, v)
			} else {
				v, err := b(pair)
				if err != nil {
					return nil, nil, err
				}
				bs = append(bs, v)
			}
		}
	}
	return as, bs, nil
}

// emitRatio prints the median of the pairs' ratios num[i]/den[i] as key and their spread as
// key_spread.
func emitRatio(emit func(string, any), key string, num, den []float64) {
	r := make([]float64, len(num))
	lo, hi := 0.0, 0.0
	for i := range num {
		r[i] = num[i] / den[i]
		if i == 0 || r[i] < lo {
			lo = r[i]
		}
		if i == 0 || r[i] > hi {
			hi = r[i]
		}
	}
	emit(key, median(r))
	emit(key+"_spread", fmt.Sprintf("%.3g–%.3g", lo, hi))
}
