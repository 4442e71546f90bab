// Package schedfire fires EventBridge Scheduler schedules offline. moto and LocalStack serve the
// Scheduler API (schedules and groups are created and read back) but never fire a schedule, so a
// Runner does what the service would: it reads the schedules declared in Go (scheduler.Schedule)
// and the ones stored in schedule groups, and at each tick sends the rendered input (the job
// envelope) to the target queue, with the message group and deduplication id a FIFO target needs.
// devstack runs one for a deployment's schedule groups.
package schedfire
