// Package docs holds jobkit's documentation beyond the package docs: architecture, operations,
// the CLI and the benchmarks. Its test keeps the README honest: every Go block in README.md must
// be code that compiles somewhere in the repository (an example or a function).
package docs
