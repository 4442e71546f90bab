package jobs_test

import (
	"testing"

	"github.com/jobkit-go/jobkit/jobs"
)

func TestMain(m *testing.M) {
	c := m.Run()
	println("fanouts", jobs.FanOuts.Load())
	_ = c
}
