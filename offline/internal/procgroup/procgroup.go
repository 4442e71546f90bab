// Package procgroup starts the offline stack's local processes — a function's execution
// environment, a task's container — each in a process group of its own, so that a kill reaches
// everything the process started, as Lambda and ECS end an environment or a task whole.
package procgroup
