package jobs

import (
	"unsafe"

	"github.com/jobkit-go/jobkit/jobs/internal/wire"
)

// This file holds the runtime's every use of package unsafe: the jobs of a batch are allocated a
// kind at a time and their args decoded in place while the envelope is read. BenchmarkSQSHandler
// (bench_test.go) measures what it buys.

// jobPtr points at a Job[T] of a registration's T (or at its Args), typed by the registration.
type jobPtr = unsafe.Pointer

// jobLayout describes Job[T] for the slab allocator: a function making n zero jobs in one
// allocation, the size of one, and where its Args are.
func jobLayout[T JobArgs]() (newJobs func(n int) jobPtr, size, argsOffset uintptr) {
	return func(n int) jobPtr { return jobPtr(unsafe.SliceData(make([]Job[T], n))) },
		unsafe.Sizeof(Job[T]{}), unsafe.Offsetof(Job[T]{}.Args)
}

// argsIntact reports whether EncodedArgs is still the validated JSON the runtime decoded.
func (r *JobRow) argsIntact() bool {
	return r.argsSrc != "" && len(r.argsSrc) == len(r.EncodedArgs) &&
		unsafe.StringData(r.argsSrc) == unsafe.SliceData(r.EncodedArgs)
}

// preDecoder decodes the args of the envelopes of a batch while wire.DecodeHeader reads them:
// when "args" follows "kind" and the kind's worker has an args plan, the args go straight into a
// job of that kind, with no second pass over them. The jobs of a kind come from one allocation
// per batch. What it cannot decode it leaves to the job's run, which decodes as usual.
type preDecoder struct {
	lookup func(kind string) *registered

	// The last kind looked up, and its registration (nil: no worker).
	kind string
	reg  *registered

	// Job slots by kind: a few kinds at a time, each with up to maxSlab jobs per allocation.
	slabs [4]jobSlab
	next  int // the slab replaced when a fifth kind comes
	// left is how many records of the batch, this one included, may still need a job.
	left int

	dates wire.DateCache // for the envelopes' enqueued_at

	// What decode did for the envelope being read.
	job    unsafe.Pointer // a job of jobReg's type, or nil
	jobReg *registered
	ready  bool // job's Args hold the args
}

// reset forgets the current envelope's job (its slot is not reused).
func (pd *preDecoder) reset() {
	pd.job, pd.jobReg, pd.ready = nil, nil, false
}

// registration returns the worker registration for kind, remembering the last one.
func (pd *preDecoder) registration(kind string) *registered {
	if kind != pd.kind || pd.kind == "" {
		pd.kind, pd.reg = kind, pd.lookup(kind)
	}
	return pd.reg
}

// jobSlab is n jobs of reg's type at base, used of them given out.
type jobSlab struct {
	reg     *registered
	base    unsafe.Pointer
	used, n int
}

// maxSlab bounds the jobs allocated at once: a large batch of many kinds wastes little.
const maxSlab = 32

// newJob returns a zero job of reg's type, from the batch's slots for reg's kind.
func (pd *preDecoder) newJob(reg *registered) unsafe.Pointer {
	sl := &pd.slabs[pd.next]
	for k := range pd.slabs {
		if pd.slabs[k].reg == reg {
			sl = &pd.slabs[k]
			break
		}
	}
	if sl.reg != reg || sl.used == sl.n {
		if sl.reg != reg {
			pd.next = (pd.next + 1) % len(pd.slabs)
		}
		n := min(max(pd.left, 1), maxSlab)
		*sl = jobSlab{reg: reg, base: reg.newJobs(n), n: n}
	}
	job := unsafe.Add(sl.base, uintptr(sl.used)*reg.jobSize)
	sl.used++
	return job
}

// decode is the envelope decoder's wire.ArgsFunc: it forgets the job of an earlier "args", then
// decodes the args at s[i] into a new job of kind and returns the index after them. It reports
// false when kind is empty or has no plan, or the plan cannot decode them; the job (if one was
// made) is kept, without its args.
func (pd *preDecoder) decode(kind string, s string, i int) (int, bool) {
	pd.reset()
	if kind == "" {
		return 0, false
	}
	reg := pd.registration(kind)
	if reg == nil || reg.plan == nil {
		return 0, false
	}
	job := pd.newJob(reg)
	pd.job, pd.jobReg = job, reg
	end, ok := reg.plan.DecodeValue(s, i, unsafe.Add(job, reg.argsOffset))
	pd.ready = ok
	return end, ok
}
