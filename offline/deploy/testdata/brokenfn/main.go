// Command brokenfn does not build, on purpose: TestDeployRunsWhatItCanOfAPlainApp maps a
// function to it to show that a function whose package does not build is skipped, not fatal.
package main

func main() {
	var n int = "not a number"
	_ = n
}
