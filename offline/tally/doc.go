// Package tally keeps what became of each job of a run on the local stack, and sorts the jobs at
// the end into succeeded, cancelled, dead, stranded and lost, naming the ones that went wrong. The three
// programs that count jobs — `jobkit dev` (package devrun), `make dev` (internal/devapp) and
// `make chaos` (internal/chaos) — share it, so a job counts the same everywhere:
//
//   - succeeded: the run's own evidence says so (End.Succeeded), or, without such evidence, the
//     event source mapping deleted its message after a run that did not dead-letter it;
//   - cancelled: cancelled by an operator (jobs.Client.Cancel) before it ran, its message
//     deleted unrun (event.Cancelled);
//   - dead: it is in a dead-letter queue — expected or not, redriven and dead-lettered again or
//     not — or it may be one of the dead-letter messages a listing could not tell apart;
//   - stranded: its state never ended — still waiting, in flight or retrying on its queue;
//   - lost: none of these.
//
// A Book records events as the run goes, keyed by job id (a redrive or a duplicate send puts a
// job in a new message; it stays one job): Track (enqueued), OnBatch (the mapping's report of a
// delivery), Started (a run began) and Record (the runtime's outcome of an attempt). Settle then
// reads where the jobs are at the end (End) and returns a Tally. Job.State says where a job was
// last known to be ("retrying, attempt 3, last error: …", "never seen by a worker"), and Lines
// names jobs, a sensible number of them, then "and N more".
//
// The runtime reports each job's start and outcome as typed events (jobs.Config.OnEvent); the
// offline stack asks the functions to write them as JSON lines (devstack.Config.Events), and
// ParseLine turns such a line into the Book's Event. No log text is read.
package tally
