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
	got, err := rotate(n, a, b)
	if err != nil {
		return nil, nil, err
	}
	return got[0], got[1], nil
}

// rotate runs n rounds of every side, round r starting with side r mod len(sides) and going on
// forwards in even rounds and backwards in odd ones (with three sides, six rounds run every
// order once), and returns each side's figures in round order: with two sides, alternate's pairs.
func rotate(n int, sides ...func(round int) (float64, error)) ([][]float64, error) {
	got := make([][]float64, len(sides))
	m := len(sides)
	for round := range n {
		for k := range sides {
			step := k
			if round%2 == 1 {
				step = m - k
			}
			side := (round + step) % m
			v, err := sides[side](round)
			if err != nil {
				return nil, err
			}
			got[side] = append(got[side], v)
		}
	}
	return got, nil
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
