// Package scheduler runs jobs on a schedule and far in the future with Amazon EventBridge
// Scheduler, and fires the same schedules offline.
//
// Three parts share one definition of a schedule and one wire format:
//
//   - Schedule declares a recurring (cron/rate) or one-time (at) job in Go: its expression, time
//     zone, flexible window, job args, target queue, FIFO group, retry policy and dead-letter
//     queue. The CDK construct in infra/constructs renders it; Schedule.Input is the target input,
//     an envelope whose id is sched:<name>:<aws.scheduler.scheduled-time>, so that Scheduler
//     stamps every tick with its own idempotent id.
//   - Delayer is the jobs.LongDelayer the producer uses for delays beyond jobs.MaxSQSDelay: it
//     creates a one-time at() schedule (UTC, deleted after completion) whose input is the job's
//     envelope, and deletes it when the job is cancelled.
//
// Offline, where emulators store schedules but never run them, the local stack fires them
// (package offline/schedfire) with the same expressions and rendered envelopes.
//
// Expressions follow EventBridge Scheduler: cron has six fields (minutes hours day-of-month month
// day-of-week year) with exactly one of day-of-month and day-of-week set to ?, days of the week are
// 1-7 from Sunday (or SUN-SAT), and L, W and # are supported as EventBridge documents them. The
// parser is written here rather than borrowed: robfig/cron has no year field, no L/W/# and numbers
// Sunday 0; gronx treats a six-field expression as seconds-first unless the sixth field looks like
// a year, numbers Sunday 0 and ORs day-of-month with day-of-week. Both would need a translating
// parser of their own, and neither computes next-fire times with Scheduler's daylight-saving
// rules (see Expression).
package scheduler
