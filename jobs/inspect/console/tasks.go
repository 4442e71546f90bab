package console

import (
	"crypto/rand"
	"encoding/hex"
	"sync"

	"github.com/jobkit-go/jobkit/jobs/inspect"
)

// task is a redrive running in the background; the page polls /api/tasks/{id} for its progress.
type task struct {
	ID       string `json:"id"`
	Queue    string `json:"queue"`
	Done     bool   `json:"done"`
	Total    int64  `json:"total"`
	Moved    int64  `json:"moved"`
	Skipped  int64  `json:"skipped"`
	Failed   int64  `json:"failed"`
	NoDest   int64  `json:"no_destination"`
	Returned int64  `json:"returned"`
	Error    string `json:"error"`
}

// tasks keeps the last redrives (at most keepTasks) by id.
type tasks struct {
	mu    sync.Mutex
	byID  map[string]*task
	order []string
}

const keepTasks = 64

func newTasks() *tasks { return &tasks{byID: map[string]*task{}} }

func (ts *tasks) start(queue string, total int64) *task {
	var b [8]byte
	_, _ = rand.Read(b[:])
	t := &task{ID: hex.EncodeToString(b[:]), Queue: queue, Total: total}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.byID[t.ID] = t
	ts.order = append(ts.order, t.ID)
	if len(ts.order) > keepTasks {
		delete(ts.byID, ts.order[0])
		ts.order = ts.order[1:]
	}
	return t
}

// get returns a copy of the task, and false if there is none.
func (ts *tasks) get(id string) (task, bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t, ok := ts.byID[id]
	if !ok {
		return task{}, false
	}
	return *t, true
}

// update changes a task under the lock.
func (ts *tasks) update(t *task, fn func(t *task)) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	fn(t)
}

// add folds one finished redrive into the task's counts.
func (t *task) add(r *inspect.RedriveResult) {
	if r == nil {
		return
	}
	t.Moved += r.Moved
	t.Failed += r.Failed + r.Unconfirmed
	t.NoDest += r.NoDestination
	t.Returned += r.Returned
}
